package inntest

import (
	"bytes"
	"fmt"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const binGroup = "alt.binaries.test"

// TestINNPostAndOver posts 2,000 generated articles with IHAVE and reads them
// back with GROUP, OVER, XOVER and ARTICLE on a reader connection.
func TestINNPostAndOver(t *testing.T) {
	t.Parallel()
	began := time.Now()
	s := Start(t)
	started := time.Since(began)
	s.NewGroup(t, binGroup)
	s.NewGroup(t, "alt.empty")

	const n = 2000
	arts := Generate(n, binGroup)
	require.Len(t, arts, n)

	postBegan := time.Now()
	s.Post(t, arts)
	posted := time.Since(postBegan)
	t.Logf("INN: started in %s, %d articles posted with IHAVE in %s", started.Round(time.Millisecond), n, posted.Round(time.Millisecond))
	require.Less(t, posted, 60*time.Second, "posting %d articles on one connection should take seconds", n)
	require.Len(t, s.Posted(), n)

	readBegan := time.Now()
	defer func() { t.Logf("INN: read back in %s", time.Since(readBegan).Round(time.Millisecond)) }()
	c := s.DialReader(t)

	// Everything accepted is there at once: innd writes the overview and
	// the active file as it accepts each article.
	count, low, high, err := Group(c, binGroup)
	require.NoError(t, err)
	require.Equal(t, [3]int64{n, 1, n}, [3]int64{count, low, high}, "GROUP count, low, high")

	// OVER: one line per article, numbered in posting order.
	lines := overLines(t, c, "OVER", fmt.Sprintf("%d-%d", low, high), 224)
	require.Len(t, lines, n)
	for i, l := range lines {
		f := strings.Split(l, "\t")
		require.GreaterOrEqual(t, len(f), 9, "overview line %q", l)
		a := arts[i]
		require.Equal(t, strconv.Itoa(i+1), f[0], "article number of %s", a.MessageID)
		require.Equal(t, a.Subject, f[1])
		require.Equal(t, a.From, f[2])
		require.Equal(t, a.Date, f[3])
		require.Equal(t, a.MessageID, f[4])
		require.Equal(t, fmt.Sprintf("Xref: %s %s:%d", PathHost, binGroup, i+1), f[len(f)-1], "the Xref field ends the line")
	}
	nums := s.Numbers(t, binGroup)
	require.Len(t, nums, n)
	for i, a := range arts {
		require.Equal(t, int64(i+1), nums[a.MessageID], "number of %s", a.MessageID)
	}

	// XOVER answers the same.
	require.Equal(t, lines[:10], overLines(t, c, "XOVER", "1-10", 224))

	// Past the high watermark: OVER answers 423, XOVER 224 and an empty block.
	past := fmt.Sprintf("%d-%d", n+1, n+100)
	code, over := overRaw(t, c, "OVER "+past)
	t.Logf("INN: OVER %s past the high watermark answers %d", past, code)
	requireEmpty(t, "OVER "+past, code, over)
	code, over = overRaw(t, c, "XOVER "+past)
	t.Logf("INN: XOVER %s past the high watermark answers %d", past, code)
	requireEmpty(t, "XOVER "+past, code, over)

	// An empty group: count 0, high below low; OVER finds nothing.
	count, low, high, err = Group(c, "alt.empty")
	require.NoError(t, err)
	t.Logf("INN: GROUP of an empty group: count %d low %d high %d", count, low, high)
	require.Zero(t, count)
	require.Less(t, high, low)
	code, over = overRaw(t, c, "OVER 1-100")
	t.Logf("INN: OVER 1-100 on an empty group answers %d", code)
	requireEmpty(t, "OVER on an empty group", code, over)

	// Bodies come back intact, dot-stuffed lines too.
	_, _, _, err = Group(c, binGroup)
	require.NoError(t, err)
	dotted := 0
	for i, a := range arts {
		if a.HasDotLine() {
			dotted++
		}
		body := articleBody(t, c, a.MessageID)
		require.Equal(t, string(a.Body), string(body), "body of %s", a.MessageID)
		// And by number, in the group.
		if i%50 == 0 {
			require.Equal(t, string(a.Body), string(articleBody(t, c, strconv.Itoa(i+1))))
		}
	}
	require.Greater(t, dotted, 100, "the generator should make bodies with dot lines")
}

// TestINNInstancesApart starts two instances in one test: each has its own
// port, directory and control socket, and takes the same Message-IDs.
func TestINNInstancesApart(t *testing.T) {
	t.Parallel()
	a, b := Start(t), Start(t)
	require.NotEqual(t, a.Addr(), b.Addr())
	require.NotEqual(t, a.Dir(), b.Dir())
	arts := Generate(50, "alt.test")
	for _, s := range []*Server{a, b} {
		s.NewGroup(t, "alt.test")
		s.Post(t, arts)
	}
	b.NewGroup(t, "alt.only.b")
	for _, s := range []*Server{a, b} {
		require.Len(t, s.Numbers(t, "alt.test"), 50)
	}
	c := a.DialReader(t)
	_, _, _, err := Group(c, "alt.only.b")
	require.Error(t, err, "a group made on one instance is not on the other")
}

// TestINNReaderNeedsModeReader records that localhost, being a peer, is in
// transit mode until MODE READER.
func TestINNReaderNeedsModeReader(t *testing.T) {
	t.Parallel()
	s := Start(t)
	s.NewGroup(t, binGroup)
	c := s.DialPeer(t)
	_, _, _, err := Group(c, binGroup)
	require.Error(t, err)
	t.Logf("INN: GROUP before MODE READER: %v", err)
	var perr *textproto.Error
	require.ErrorAs(t, err, &perr)
	require.Equal(t, 401, perr.Code)

	// Duplicates are refused with 435 and change nothing.
	arts := Generate(3, binGroup)
	s.Post(t, arts)
	id, err := c.Cmd("IHAVE %s", arts[1].MessageID)
	require.NoError(t, err)
	c.StartResponse(id)
	code, msg, err := c.ReadCodeLine(0)
	c.EndResponse(id)
	t.Logf("INN: IHAVE of an article it has: %d %s (%v)", code, msg, err)
	require.Equal(t, 435, code)
	require.Len(t, s.Numbers(t, binGroup), 3)
}

func TestGenerate(t *testing.T) {
	arts := Generate(500, binGroup)
	require.Len(t, arts, 500)
	ids := map[string]bool{}
	var text, yenc, dots int
	for _, a := range arts {
		require.NoError(t, a.check())
		require.False(t, ids[a.MessageID], "duplicate %s", a.MessageID)
		ids[a.MessageID] = true
		if strings.Contains(a.Subject, "yEnc (") {
			yenc++
			require.True(t, bytes.HasPrefix(a.Body, []byte("=ybegin part=")))
		} else {
			text++
		}
		if a.HasDotLine() {
			dots++
		}
	}
	require.Greater(t, text, 30)
	require.Greater(t, yenc, 300)
	require.Greater(t, dots, 20)
	again := Generate(500, binGroup)
	require.Equal(t, arts[10].Subject, again[10].Subject, "same content for the same n")
	require.NotEqual(t, arts[10].MessageID, again[10].MessageID, "new Message-IDs on each call")
}

// overRaw sends an OVER-like command and returns the code and, for 224,
// the lines.
func overRaw(t *testing.T, c *textproto.Conn, cmd string) (int, []string) {
	t.Helper()
	id, err := c.Cmd("%s", cmd)
	require.NoError(t, err)
	c.StartResponse(id)
	defer c.EndResponse(id)
	code, _, err := c.ReadCodeLine(0)
	if code == 0 {
		require.NoError(t, err)
	}
	if code != 224 {
		return code, nil
	}
	lines, err := c.ReadDotLines()
	require.NoError(t, err)
	return code, lines
}

func overLines(t *testing.T, c *textproto.Conn, verb, rng string, want int) []string {
	t.Helper()
	code, lines := overRaw(t, c, verb+" "+rng)
	require.Equal(t, want, code, "%s %s", verb, rng)
	return lines
}

func requireEmpty(t *testing.T, what string, code int, lines []string) {
	t.Helper()
	require.Contains(t, []int{224, 423}, code, what)
	require.Empty(t, lines, what)
}

func articleBody(t *testing.T, c *textproto.Conn, which string) []byte {
	t.Helper()
	id, err := c.Cmd("ARTICLE %s", which)
	require.NoError(t, err)
	c.StartResponse(id)
	defer c.EndResponse(id)
	_, _, err = c.ReadCodeLine(220)
	require.NoError(t, err, "ARTICLE %s", which)
	art, err := c.ReadDotBytes()
	require.NoError(t, err)
	_, body, ok := bytes.Cut(art, []byte("\n\n"))
	require.True(t, ok, "ARTICLE %s has no empty line", which)
	return body
}
