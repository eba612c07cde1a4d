package edgeframe

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestReaderGrowsBufferAsBytesArrive(t *testing.T) {
	t.Parallel()
	// A header that claims 60 MiB, followed by 10 bytes: the Reader must not
	// allocate the 60 MiB it was promised.
	stream := binary.BigEndian.AppendUint32([]byte{byte(TypeChunk)}, 60<<20)
	stream = append(stream, make([]byte, 10)...)
	r, err := NewReader(bytes.NewReader(stream), Config{})
	require.NoError(t, err)
	_, err = r.Next()
	require.ErrorIs(t, err, ErrTruncated)
	require.LessOrEqual(t, cap(r.buf), firstGrow)

	// With 3 MiB of it sent, the buffer is at most twice what arrived.
	stream = append(stream, make([]byte, 3<<20)...)
	r.Reset(bytes.NewReader(stream))
	_, err = r.Next()
	require.ErrorIs(t, err, ErrTruncated)
	require.LessOrEqual(t, cap(r.buf), 2*(3<<20+10))
}

func TestReaderBufferNeverExceedsFrame(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	sizes := []int{10, 3 << 20, 100, 5<<20 + 7}
	for i, n := range sizes {
		require.NoError(t, w.Chunk(int64(i), int64(i), make([]byte, n)))
	}
	require.NoError(t, w.End())
	r, err := NewReader(&buf, Config{MaxFrame: 5<<20 + 7 + ChunkPrefixLen})
	require.NoError(t, err)
	largest := 0
	for _, n := range sizes {
		f, err := r.Next()
		require.NoError(t, err)
		require.Len(t, f.Data, n)
		largest = max(largest, n+ChunkPrefixLen)
		require.LessOrEqual(t, cap(r.buf), largest, "the buffer is never larger than the largest frame so far")
	}
}

func TestUTF8CheckAcrossSplits(t *testing.T) {
	t.Parallel()
	inputs := []string{
		"", "plain ascii", "é", "日本語", "🙂 and 𝄞", "\uFFFD literal replacement char",
		"\xff", "a\xc3", "\xc3(", "\xe2\x82", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 too big",
		"\x80 lone continuation", "ok \xf0\x9f\x99", "\xc0\xaf overlong",
	}
	for _, s := range inputs {
		want := utf8.ValidString(s)
		for i := 0; i <= len(s); i++ {
			for j := i; j <= len(s); j++ {
				var u utf8Check
				got := u.feed([]byte(s[:i])) && u.feed([]byte(s[i:j])) && u.feed([]byte(s[j:])) && u.end()
				require.Equal(t, want, got, "%q split at %d and %d", s, i, j)
			}
		}
	}
	// Byte by byte.
	s := strings.Repeat("aé日🙂", 10)
	var u utf8Check
	for i := range len(s) {
		require.True(t, u.feed([]byte{s[i]}))
	}
	require.True(t, u.end())
}

// The fast path accepts only what the token-by-token decoder accepts, with
// the same batch; everything else is decided by that decoder.
func TestFastPathAgrees(t *testing.T) {
	t.Parallel()
	accepted := []string{
		`{"from":1,"to":2,"headers":2,"items":[]}`,
		" {\"items\" : [ {\"value\" : [1, {\"a\":null}] , \"key\":\"k\\u00e9\\n\"} ] ,\"headers\":0,\"to\":-0,\"from\":-5,\"missing\":[] }\n\t",
		`{"from":1,"to":9,"headers":3,"items":[{"key":"a","value":null},{"key":"b","value":"x\"y"},{"key":"c","value":-1.5e+3}],"missing":[2,3],"final":true}`,
		`{"from":-9223372036854775808,"to":9223372036854775807,"headers":0,"items":[{"key":"é","value":{}}],"final":false}`,
		`{"from":1,"to":2,"headers":2,"items":[{"key":"\ud800","value":true}]}`,
	}
	for _, body := range accepted {
		fb, ok := decodeFast([]byte(body))
		require.True(t, ok, body)
		sb, err := decodeSlow(strings.NewReader(body), DefaultMaxBatch)
		require.NoError(t, err, body)
		require.Equal(t, sb, fb, body)
	}
	refused := []string{
		``, `{}`, `[]`, `{"from":1,"to":2,"headers":2}`,
		`{"from":1,"to":2,"headers":2,"items":[],"from":1}`,
		`{"From":1,"to":2,"headers":2,"items":[]}`,
		`{"fr\u006fm":1,"to":2,"headers":2,"items":[]}`, // the slow path decides
		`{"from":1.0,"to":2,"headers":2,"items":[]}`,
		`{"from":1e2,"to":200,"headers":3,"items":[]}`,
		`{"from":9223372036854775808,"to":2,"headers":2,"items":[]}`,
		`{"from":01,"to":2,"headers":2,"items":[]}`,
		`{"from":1,"to":2,"headers":2,"items":[{"key":"","value":1}]}`,
		`{"from":1,"to":2,"headers":2,"items":[{"key":"k"}]}`,
		`{"from":1,"to":2,"headers":2,"items":[{"key":"k","value":1,"x":1}]}`,
		`{"from":1,"to":2,"headers":2,"items":[{"key":"k","value":tru}]}`,
		`{"from":1,"to":2,"headers":2,"items":[{"key":"k","value":truex}]}`,
		`{"from":1,"to":2,"headers":2,"items":[{"key":"k","value":"\x"}]}`,
		`{"from":1,"to":2,"headers":2,"items":[{"key":"k","value":[1,]}]}`,
		`{"from":1,"to":2,"headers":2,"items":[{"key":"k","value":-}]}`,
		`{"from":1,"to":2,"headers":2,"items":[{"key":"k","value":1.}]}`,
		`{"from":1,"to":2,"headers":2,"items":[{"key":null,"value":1}]}`,
		`{"from":1,"to":2,"headers":2,"items":[],"final":null}`,
		`{"from":1,"to":2,"headers":2,"items":[],"final":1}`,
		`{"from":1,"to":2,"headers":2,"items":[],"missing":null}`,
		`{"from":1,"to":2,"headers":2,"items":[],"missing":[3]}`,
		`{"from":3,"to":2,"headers":2,"items":[]}`,
		`{"from":1,"to":2,"headers":-3,"items":[]}`,
		`{"from":1,"to":2,"headers":2,"items":[]} x`,
		`{"from":1,"to":2,"headers":2,"items":[]}{}`,
		"{\"from\":1,\"to\":2,\"headers\":3,\"items\":[{\"key\":\"k\",\"value\":\"\xff\"}]}",
		"{\"from\":1,\"to\":2,\"headers\":3,\"items\":[{\"key\":\"a\tb\",\"value\":1}]}",
		`{"from":1,"to":2,"headers":2,"items":[{"key":"k","value":` + strings.Repeat("[", maxFastDepth+2) + strings.Repeat("]", maxFastDepth+2) + `}]}`,
	}
	for _, body := range refused {
		_, ok := decodeFast([]byte(body))
		require.False(t, ok, body)
	}
}

// A read error after some bytes reaches DecodeBatch's caller as before.
func TestFastPathReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	_, err := DecodeBatch(io.MultiReader(strings.NewReader(`{"from":1`), errReader{boom}), 0)
	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, ErrBadBatch)
}

// A large binary body's values are checked in parts on goroutines of their
// own: the result is the serial one's, and a bad value is named by its
// index in the whole batch, the first of several.
func TestDecodeBinaryInParts(t *testing.T) {
	b := Batch{From: 1, To: 100, Headers: 100}
	for i := range 10 {
		b.Items = append(b.Items, Item{Key: fmt.Sprintf("k%d", i), Value: json.RawMessage(fmt.Sprintf(`{"i": %d, "s": "<"}`, i))})
	}
	body, err := MarshalBatchBinary(b)
	require.NoError(t, err)
	serial, err := decodeBinary(slices.Clone(body), newEarly(split{}))
	require.NoError(t, err)
	parts, err := decodeBinary(slices.Clone(body), newEarly(split{parts: 3, above: 1}))
	require.NoError(t, err)
	require.Equal(t, serial, parts)
	require.Equal(t, `{"i": 9, "s": "<"}`, string(parts.Items[9].Value))

	b.Items[7].Value = json.RawMessage(`{`)
	b.Items[9].Value = json.RawMessage(`]`)
	body, err = MarshalBatchBinary(b)
	require.NoError(t, err)
	for _, sp := range []split{{}, {parts: 3, above: 1}, {parts: 10, above: 1}} {
		_, err = decodeBinary(body, newEarly(sp))
		require.ErrorIs(t, err, ErrBadBatch)
		require.ErrorContains(t, err, `items[7] (key "k7")`, "%+v", sp)
	}
}

// FuzzValidValue: validValue takes exactly the values encoding/json
// takes, in UTF-8.
func FuzzValidValue(f *testing.F) {
	for _, s := range []string{
		`{"subject":"a \"b\" \u003cc\u003e","parts":[{"n":1,"article":1000001,"bytes":739123}],"complete":true}`,
		` [1, -0.5e+3, "x\\y", null, false, {}, [], {"a": {"b": []}}] `,
		`"12345678\u00e9é€"`, `-`, `01`, `1.`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `"\x"`, "\"a\tb\"", `truex`, `1 2`,
		`{"a":[}`, `[{]`, `"\u12"`, strings.Repeat("[", 1001) + strings.Repeat("]", 1001),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		want := utf8.Valid(v) && json.Valid(v)
		if got := validValue(v); got != want {
			t.Fatalf("validValue(%q) = %v, encoding/json says %v", v, got, want)
		}
	})
}

// BenchmarkValidValue checks the values of the ingest bench's batch (21
// MB of collator items) as the coordinator does a binary body's. The
// baselines, in the same run: encoding/json's json.Valid, the obvious
// way, and utf8.Valid, one pass over the bytes that validValue makes too.
func BenchmarkValidValue(b *testing.B) {
	values := ingestValues(10000)
	n := 0
	for _, v := range values {
		n += len(v)
	}
	for _, bc := range []struct {
		name  string
		valid func([]byte) bool
	}{{"validValue", validValue}, {"json.Valid", json.Valid}, {"utf8.Valid", utf8.Valid}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				for _, v := range values {
					if !bc.valid(v) {
						b.Fatal("not valid")
					}
				}
			}
		})
	}
}

// ingestValues are n values shaped as the collator's items (the ingest
// bench's): a binary of 2 to 33 parts, some 2.1 KB of JSON on average.
func ingestValues(n int) [][]byte {
	values := make([][]byte, n)
	article := 1_000_000
	for i := range values {
		v := fmt.Appendf(nil, `{"subject":"Quiet.River.%d.1080p.WEB-DL.x264-SYN [%02d/27] - \"Quiet.River.%d.part%02d.rar\" yEnc",`, i, i%27+1, i, i%27+1)
		v = fmt.Appendf(v, `"name":"Quiet.River.%d.part%02d.rar","poster":"poster \u003cposter@example.invalid\u003e","group":"alt.binaries.bench",`, i, i%27+1)
		parts := 2 + i*7%32
		v = fmt.Appendf(v, `"date":"Mon, 01 Jan 2024 12:00:00 +0000","total":%d,"complete":true,"parts":[`, parts)
		for p := 1; p <= parts; p++ {
			article++
			if p > 1 {
				v = append(v, ',')
			}
			v = fmt.Appendf(v, `{"n":%d,"article":%d,"messageId":"\u003c%d@alt.binaries.bench.synthetic\u003e","bytes":%d}`, p, article, article, 739_000+article%2000)
		}
		values[i] = append(v, "]}"...)
	}
	return values
}
