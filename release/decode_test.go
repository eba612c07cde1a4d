package release_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

// demoItem is an item as a Collator writes it for a synthetic binary.
func demoItem(parts int) []byte {
	b := usenet.Binary{Subject: `[01/27] - "Some.Release.Name.2024.1080p.part01.rar" yEnc`, Name: "Some.Release.Name.2024.1080p.part01.rar",
		Poster: "nzbget-poster <poster@nzb.invalid>", Group: "alt.binaries.edgeindex.demo", Date: "Sat, 04 May 2024 12:00:00 +0000",
		Total: parts, Complete: true}
	for i := 1; i <= parts; i++ {
		b.Parts = append(b.Parts, usenet.Part{N: i, Article: int64(100000 + i), MessageID: fmt.Sprintf("<%d@alt.binaries.edgeindex.demo.synthetic>", 100000+i), Bytes: 739124})
	}
	v, _ := json.Marshal(b)
	return v
}

// decodeSeeds are values the fast path takes and values it hands to
// encoding/json.
var decodeSeeds = []string{
	string(demoItem(3)),
	`{"subject":"a \"q\" \\ \/ \b\f\n\r\t \u003c\u0026\u00e9\u2028 \u0000","parts":[]}`,
	`{ "total" : 2 , "complete" : false , "parts" : [ { "n" : 1 , "messageId" : "<x>" } ] }`,
	`{"Subject":"case"}`, `{"subject":null}`, `{"total":1.0}`, `{"total":1e2}`, `{"total":99999999999}`, `{"total":-0}`,
	`{"total":01}`, `{"subject":"\ud83d\ude00"}`, `{"subject":"\ud800"}`, "{\"subject\":\"\xff\"}", `{"extra":1}`,
	`{"parts":[{"n":1,"x":2}]}`, `{"parts":null}`, `[]`, `null`, ``, `{`, `{"subject":"a"} x`, `{"complete":tru}`,
	`{"subject":"tab	raw"}`, `{"parts":[{"n":1},]}`, `{"subject":"a","subject":"b"}`, `{}`,
}

func TestDecodeBinary(t *testing.T) {
	t.Parallel()
	for _, s := range decodeSeeds {
		checkDecode(t, []byte(s))
	}
	var b usenet.Binary
	require.NoError(t, release.DecodeBinary(demoItem(35), &b))
	require.Len(t, b.Parts, 35)
	require.Equal(t, "<100035@alt.binaries.edgeindex.demo.synthetic>", b.Parts[34].MessageID)
	// Fields the JSON does not name are kept, as json.Unmarshal keeps them.
	b = usenet.Binary{Group: "kept"}
	require.NoError(t, release.DecodeBinary([]byte(`{"subject":"s"}`), &b))
	require.Equal(t, usenet.Binary{Subject: "s", Group: "kept"}, b)
}

// checkDecode: DecodeBinary answers what json.Unmarshal answers.
func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	var got, want usenet.Binary
	gotErr := release.DecodeBinary(data, &got)
	wantErr := json.Unmarshal(data, &want)
	require.Equal(t, wantErr == nil, gotErr == nil, "%q: %v, encoding/json: %v", data, gotErr, wantErr)
	if wantErr == nil {
		require.Equal(t, want, got, "%q", data)
	}
}

func FuzzDecodeBinary(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDecode)
}

func BenchmarkDecodeBinary(b *testing.B) {
	item := demoItem(35)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			var x usenet.Binary
			if err := release.DecodeBinary(item, &x); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var x usenet.Binary
			if err := json.Unmarshal(item, &x); err != nil {
				b.Fatal(err)
			}
		}
	})
}
