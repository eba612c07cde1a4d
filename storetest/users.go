package storetest

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/release"
)

// The users cases (newznab.Users and the counting half of newznab.Store):
// adding, removing and suspending users, keys, the daily request and grab
// limits, and the limit under concurrent requests. A backend that is not
// both skips them.

// userStore manages users and counts their requests.
type userStore interface {
	newznab.Store
	newznab.Users
}

func users(t *testing.T, e *env) userStore {
	t.Helper()
	us, ok := e.Backend.(userStore)
	if !ok {
		t.Skip("the backend implements no newznab.Store and newznab.Users")
	}
	return us
}

// addUser adds a user with a new key and returns the key's hash.
func (e *env) addUser(t *testing.T, us userStore, name string, requests, grabs int64) string {
	t.Helper()
	key, err := newznab.NewKey()
	require.NoError(t, err)
	h := newznab.HashKey(key)
	require.NoError(t, us.AddUser(e.ctx, newznab.User{Name: name, KeyHash: h, RequestLimit: requests, GrabLimit: grabs}))
	return h
}

// usersDay is the instant the users cases count on.
var usersDay = time.Date(2026, 3, 4, 23, 59, 0, 0, time.UTC)

func testUsersManage(t *testing.T, e *env) {
	us := users(t, e)
	alice := e.addUser(t, us, "alice", 10, 5)
	bob := e.addUser(t, us, "bob@example.test", 0, 0)

	err := us.AddUser(e.ctx, newznab.User{Name: "alice", KeyHash: newznab.HashKey("other")})
	require.ErrorIs(t, err, edgeindex.ErrConflict, "a name taken")
	err = us.AddUser(e.ctx, newznab.User{Name: "carol", KeyHash: alice})
	require.ErrorIs(t, err, edgeindex.ErrConflict, "a key taken")

	long := make([]byte, 65)
	for i := range long {
		long[i] = 'a'
	}
	h := newznab.HashKey("k")
	for name, u := range map[string]newznab.User{
		"empty name":    {KeyHash: h},
		"long name":     {Name: string(long), KeyHash: h},
		"space":         {Name: "a b", KeyHash: h},
		"tab":           {Name: "a\tb", KeyHash: h},
		"control":       {Name: "a\x01", KeyHash: h},
		"invalid utf-8": {Name: "a\xff", KeyHash: h},
		"no hash":       {Name: "dave"},
		"short hash":    {Name: "dave", KeyHash: "abc"},
		"hash not hex":  {Name: "dave", KeyHash: h[:63] + "g"},
		"upper hash":    {Name: "dave", KeyHash: "A" + h[1:]},
		"requests":      {Name: "dave", KeyHash: h, RequestLimit: -1},
		"grabs":         {Name: "dave", KeyHash: h, GrabLimit: -1},
	} {
		require.ErrorIs(t, us.AddUser(e.ctx, u), edgeindex.ErrInvalid, name)
	}
	require.NoError(t, us.AddUser(e.ctx, newznab.User{Name: string(long[:64]), KeyHash: h}), "64 bytes is the most")

	accts, err := us.Accounts(e.ctx, usersDay)
	require.NoError(t, err)
	require.Len(t, accts, 3)
	require.Equal(t, []string{string(long[:64]), "alice", "bob@example.test"}, []string{accts[0].Name, accts[1].Name, accts[2].Name})
	require.Equal(t, newznab.Account{Name: "alice", RequestLimit: 10, GrabLimit: 5, Created: e.clock.Now().UTC()}, accts[1])

	// Suspended, then let in again.
	require.NoError(t, us.SuspendUser(e.ctx, "alice", true))
	_, err = us.UseKey(e.ctx, alice, usersDay)
	require.ErrorIs(t, err, newznab.ErrSuspended)
	accts, err = us.Accounts(e.ctx, usersDay)
	require.NoError(t, err)
	require.True(t, accts[1].Suspended)
	require.Zero(t, accts[1].Requests, "a suspended key counts nothing")
	require.NoError(t, us.SuspendUser(e.ctx, "alice", false))
	a, err := us.UseKey(e.ctx, alice, usersDay)
	require.NoError(t, err)
	require.Equal(t, int64(1), a.Requests)
	require.False(t, a.Suspended)
	require.ErrorIs(t, us.SuspendUser(e.ctx, "nobody", true), edgeindex.ErrNotFound)

	// Unknown keys.
	for _, k := range []string{newznab.HashKey("nobody's key"), "", "x"} {
		_, err = us.UseKey(e.ctx, k, usersDay)
		require.ErrorIs(t, err, newznab.ErrBadKey, k)
	}

	// Removed: its key no longer works, its counts are gone.
	require.NoError(t, us.RemoveUser(e.ctx, "alice"))
	_, err = us.UseKey(e.ctx, alice, usersDay)
	require.ErrorIs(t, err, newznab.ErrBadKey)
	require.ErrorIs(t, us.RemoveUser(e.ctx, "alice"), edgeindex.ErrNotFound)
	require.ErrorIs(t, us.SuspendUser(e.ctx, "alice", true), edgeindex.ErrNotFound)
	accts, err = us.Accounts(e.ctx, usersDay)
	require.NoError(t, err)
	require.Len(t, accts, 2)
	// The name and key are free again.
	require.NoError(t, us.AddUser(e.ctx, newznab.User{Name: "alice", KeyHash: alice}))
	a, err = us.UseKey(e.ctx, alice, usersDay)
	require.NoError(t, err)
	require.Equal(t, int64(1), a.Requests, "the old counts went with the old user")
	b, err := us.UseKey(e.ctx, bob, usersDay)
	require.NoError(t, err)
	require.Equal(t, "bob@example.test", b.Name)
}

func testUsersRequestLimit(t *testing.T, e *env) {
	us := users(t, e)
	h := e.addUser(t, us, "limited", 3, 0)
	for i := range 3 {
		a, err := us.UseKey(e.ctx, h, usersDay)
		require.NoError(t, err)
		require.Equal(t, int64(i+1), a.Requests)
		require.Equal(t, int64(3), a.RequestLimit)
	}
	for range 2 {
		a, err := us.UseKey(e.ctx, h, usersDay)
		require.ErrorIs(t, err, newznab.ErrRequestLimit)
		require.Equal(t, int64(3), a.Requests, "a refused request is not counted")
	}
	accts, err := us.Accounts(e.ctx, usersDay)
	require.NoError(t, err)
	require.Equal(t, int64(3), accts[0].Requests)

	// A minute later it is another UTC day.
	next := usersDay.Add(time.Minute)
	a, err := us.UseKey(e.ctx, h, next)
	require.NoError(t, err)
	require.Equal(t, int64(1), a.Requests)
	// The day is the UTC date, whatever the zone of the time given.
	a, err = us.UseKey(e.ctx, h, next.In(time.FixedZone("west", -5*3600)))
	require.NoError(t, err)
	require.Equal(t, int64(2), a.Requests)
	accts, err = us.Accounts(e.ctx, next)
	require.NoError(t, err)
	require.Equal(t, int64(2), accts[0].Requests)
	accts, err = us.Accounts(e.ctx, usersDay)
	require.NoError(t, err)
	require.Equal(t, int64(3), accts[0].Requests, "the day before keeps its count")

	// The largest limit there is.
	huge := e.addUser(t, us, "huge", math.MaxInt64, math.MaxInt64)
	a, err = us.UseKey(e.ctx, huge, usersDay)
	require.NoError(t, err)
	require.Equal(t, int64(math.MaxInt64), a.RequestLimit)

	// No limit.
	free := e.addUser(t, us, "free", 0, 0)
	for i := range 20 {
		a, err := us.UseKey(e.ctx, free, usersDay)
		require.NoError(t, err)
		require.Equal(t, int64(i+1), a.Requests)
	}
}

func testUsersGrab(t *testing.T, e *env) {
	us := users(t, e)
	ss := searcher(t, e)
	rels := e.buildNamed(t, ss, "g.grab", "search", []named{complete("Grab.Me.2025", searchDay), complete("Grab.Too.2025", searchDay)}, 2)
	me, too := rels["Grab.Me.2025"].ID, rels["Grab.Too.2025"].ID
	h := e.addUser(t, us, "grabber", 0, 2)

	_, err := us.Grab(e.ctx, "grabber", 987654, usersDay)
	require.ErrorIs(t, err, release.ErrNotFound, "an unknown release")
	a, err := us.UseKey(e.ctx, h, usersDay)
	require.NoError(t, err)
	require.Zero(t, a.Grabs, "an unknown release counts nothing")

	a, err = us.Grab(e.ctx, "grabber", me, usersDay)
	require.NoError(t, err)
	require.Equal(t, int64(1), a.Grabs)
	require.Equal(t, int64(1), a.Requests, "grabs and requests are counted apart")
	a, err = us.Grab(e.ctx, "grabber", too, usersDay)
	require.NoError(t, err)
	require.Equal(t, int64(2), a.Grabs)
	a, err = us.Grab(e.ctx, "grabber", me, usersDay)
	require.ErrorIs(t, err, newznab.ErrGrabLimit)
	require.Equal(t, int64(2), a.Grabs)

	r, err := ss.ReleaseByID(e.ctx, me)
	require.NoError(t, err)
	require.Equal(t, int64(1), r.Grabs, "the refused grab counted nothing")
	f, err := ss.SearchReleases(e.ctx, release.Search{Words: []string{"grab", "too"}})
	require.NoError(t, err)
	require.Equal(t, int64(1), f.Releases[0].Grabs)

	// The next day counts again; the release's grabs add up.
	a, err = us.Grab(e.ctx, "grabber", me, usersDay.Add(24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, int64(1), a.Grabs)
	r, err = ss.ReleaseByID(e.ctx, me)
	require.NoError(t, err)
	require.Equal(t, int64(2), r.Grabs)

	_, err = us.Grab(e.ctx, "nobody", me, usersDay)
	require.ErrorIs(t, err, newznab.ErrBadKey)
	require.NoError(t, us.SuspendUser(e.ctx, "grabber", true))
	_, err = us.Grab(e.ctx, "grabber", me, usersDay.Add(48*time.Hour))
	require.ErrorIs(t, err, newznab.ErrSuspended)
	r, err = ss.ReleaseByID(e.ctx, me)
	require.NoError(t, err)
	require.Equal(t, int64(2), r.Grabs)

	accts, err := us.Accounts(e.ctx, usersDay)
	require.NoError(t, err)
	require.Equal(t, []newznab.Account{{Name: "grabber", GrabLimit: 2, Requests: 1, Grabs: 2, Suspended: true, Created: e.clock.Now().UTC()}}, accts)
}

// testUsersConcurrentLimit sends many requests at once with one key: the
// limit lets exactly that many through, and counts no more.
func testUsersConcurrentLimit(t *testing.T, e *env) {
	us := users(t, e)
	ss := searcher(t, e)
	rels := e.buildNamed(t, ss, "g.race", "search", []named{complete("Race.Release", searchDay)}, 1)
	id := rels["Race.Release"].ID
	const limit, callers = 7, 24
	h := e.addUser(t, us, "racer", limit, limit)
	var wg sync.WaitGroup
	errs := make([]error, 2*callers)
	for i := range callers {
		wg.Go(func() { _, errs[i] = us.UseKey(e.ctx, h, usersDay) })
		wg.Go(func() { _, errs[callers+i] = us.Grab(e.ctx, "racer", id, usersDay) })
	}
	wg.Wait()
	count := func(errs []error, limitErr error) int {
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else {
				require.ErrorIs(t, err, limitErr)
			}
		}
		return ok
	}
	require.Equal(t, limit, count(errs[:callers], newznab.ErrRequestLimit), "requests let through")
	require.Equal(t, limit, count(errs[callers:], newznab.ErrGrabLimit), "grabs let through")
	accts, err := us.Accounts(e.ctx, usersDay)
	require.NoError(t, err)
	require.Equal(t, int64(limit), accts[0].Requests)
	require.Equal(t, int64(limit), accts[0].Grabs)
	r, err := ss.ReleaseByID(e.ctx, id)
	require.NoError(t, err)
	require.Equal(t, int64(limit), r.Grabs, fmt.Sprintf("the release counts the %d grabs let through", limit))
}
