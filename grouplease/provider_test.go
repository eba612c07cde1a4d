package grouplease_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
)

func TestProviderGroupRoundTrips(t *testing.T) {
	for _, c := range []struct{ group, provider, stored string }{
		{"alt.binaries.test", "", "alt.binaries.test"},
		{"alt.binaries.test", "eweka", "alt.binaries.test@eweka"},
		{"a.b-c+d_e", "news-2", "a.b-c+d_e@news-2"},
	} {
		assert.Equal(t, c.stored, grouplease.ProviderGroup(c.group, c.provider))
		g, p := grouplease.SplitGroup(c.stored)
		assert.Equal(t, c.group, g)
		assert.Equal(t, c.provider, p)
	}
}

func TestCheckProviderRefusesBadNames(t *testing.T) {
	for _, ok := range []string{"eweka", "a", "news-2", "x_y", "0abc"} {
		assert.NoError(t, grouplease.CheckProvider(ok), ok)
	}
	for _, bad := range []string{"", "Eweka", "-a", "_a", "a@b", "a.b", "a b", "abcdefghijklmnopqrstuvwxyz0123456789"} {
		err := grouplease.CheckProvider(bad)
		assert.True(t, errors.Is(err, edgeindex.ErrInvalid), "%q: %v", bad, err)
	}
}

// A stored group name is a newsgroup, then at most one "@" and a provider
// name: SplitGroup splits at the last "@", so a newsgroup holding one, or
// none at all, would name the wrong group.
func TestProvidersCheckGroupNameRefusesEmptyOrAtNewsgroup(t *testing.T) {
	for _, ok := range []string{"alt.binaries.test", "alt.binaries.test@eweka", "a.b-c+d_e@news-2", "x"} {
		assert.NoError(t, grouplease.CheckGroupName(ok), ok)
	}
	for _, bad := range []string{"", "@", "@eweka", "a@b@eweka", "a@@eweka", "a@", "a@Eweka", "a@b.c"} {
		err := grouplease.CheckGroupName(bad)
		assert.True(t, errors.Is(err, edgeindex.ErrInvalid), "%q: %v", bad, err)
		_, err = grouplease.Group{Name: bad}.Normalize()
		assert.True(t, errors.Is(err, edgeindex.ErrInvalid), "Normalize %q: %v", bad, err)
	}
}
