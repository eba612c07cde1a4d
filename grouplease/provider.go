package grouplease

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/edgeindex/edgeindex"
)

// A group read from a named provider is stored as NEWSGROUP@PROVIDER, and
// one read from the unnamed (default) provider as NEWSGROUP: article
// numbers differ between providers, so each provider's copy of a
// newsgroup is a group of its own, with its own ranges and plan. A
// newsgroup name never holds "@" (RFC 5536: letters, digits, "+", "-",
// "_" and dots), so the split is unambiguous.
const providerSep = "@"

// MaxProviderName is the longest provider name.
const MaxProviderName = 32

// CheckProvider refuses a provider name that is not 1 to MaxProviderName
// bytes of lower-case letters, digits, "-" and "_", starting with a letter
// or digit.
func CheckProvider(name string) error {
	if name == "" || len(name) > MaxProviderName {
		return edgeindex.Invalidf("provider %q: a name of 1 to %d bytes is required", name, MaxProviderName)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '-' || c == '_')
		if !ok {
			return edgeindex.Invalidf("provider %q: lower-case letters, digits, - and _, starting with a letter or digit", name)
		}
	}
	return nil
}

// CheckGroupName refuses a stored group name whose newsgroup part is empty
// or holds "@", or whose provider part, when there is an "@", fails
// CheckProvider: SplitGroup splits at the last "@", so a newsgroup with
// one would be split wrong (a@b@eweka), and one stored without a
// newsgroup (@eweka) names nothing a provider can read.
func CheckGroupName(name string) error {
	newsgroup, provider := SplitGroup(name)
	if newsgroup == "" {
		return edgeindex.Invalidf("group %q: a newsgroup name is required before any %q", name, providerSep)
	}
	if strings.Contains(newsgroup, providerSep) {
		return edgeindex.Invalidf("group %q: a newsgroup name holds no %q; one %q may name its provider, NEWSGROUP@PROVIDER", name, providerSep, providerSep)
	}
	if strings.Contains(name, providerSep) {
		if err := CheckProvider(provider); err != nil {
			return fmt.Errorf("group %q: %w", name, err)
		}
	}
	return nil
}

// ProviderGroup returns the stored name of newsgroup as read from
// provider: newsgroup itself for the default provider ("").
func ProviderGroup(newsgroup, provider string) string {
	if provider == "" {
		return newsgroup
	}
	return newsgroup + providerSep + provider
}

// SplitGroup splits a stored group name into its newsgroup and its
// provider ("" for the default one).
func SplitGroup(name string) (newsgroup, provider string) {
	if i := strings.LastIndex(name, providerSep); i >= 0 {
		return name[:i], name[i+1:]
	}
	return name, ""
}

// DateFinder finds the first article of a group posted on or after a
// date, as NNTmux's daytopost does: by bisection over the Date of single
// articles. A source that can (nntp.Source) is one.
type DateFinder interface {
	FindDate(ctx context.Context, group string, since time.Time) (DatePoint, error)
}

// DatePoint is where a DateFinder found a date.
type DatePoint struct {
	// Article is the first article not older than the date, within the
	// finder's tolerance; the group's high + 1 when every article is
	// older.
	Article int64 `json:"article"`
	// Date is that article's Date; zero when every article is older.
	Date time.Time `json:"date"`
	// Calls is how many OVER commands the search took.
	Calls int `json:"calls"`
}
