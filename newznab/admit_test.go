package newznab_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// heldStore is the real store but for SearchReleases, which waits until
// hold is closed; in receives once per search that started waiting.
type heldStore struct {
	*sqlstore.Store
	hold chan struct{}
	in   chan struct{}
}

func (s *heldStore) SearchReleases(ctx context.Context, q release.Search) (release.Found, error) {
	s.in <- struct{}{}
	select {
	case <-s.hold:
	case <-ctx.Done():
	}
	return s.Store.SearchReleases(ctx, q)
}

// TestAdmission: with MaxRequests 3 and MaxRequestsPerKey 2, two held
// searches of alice's leave her third refused at once (API: code 500
// "Request limit reached"; page: 503), both with Retry-After and
// counting nothing; a third user's search fills the handler, and then
// anyone's request is refused, but caps still answers. Once the searches
// end, every slot is free again, also after refused and bad keys.
func TestAdmission(t *testing.T) {
	forBackends(t, func(t *testing.T, w *pageWorld) {
		bob, err := newznab.NewKey()
		require.NoError(t, err)
		require.NoError(t, w.store.AddUser(t.Context(), newznab.User{Name: "bob", KeyHash: newznab.HashKey(bob)}))
		s := &heldStore{Store: w.store, hold: make(chan struct{}), in: make(chan struct{}, 8)}
		h, err := newznab.New(newznab.Config{Store: s, Now: func() time.Time { return now }, MaxRequests: 3, MaxRequestsPerKey: 2,
			BusyDelay: 50 * time.Millisecond})
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)

		search := func(key string) string { return srv.URL + "/api?t=search&q=ocean&apikey=" + key }
		var wg sync.WaitGroup
		held := func(u string) {
			wg.Go(func() {
				res, body := do(t, http.MethodGet, u, "")
				require.Equal(t, http.StatusOK, res.StatusCode)
				require.Len(t, newznab.Decode[newznab.RSSDoc](t, body).Channel.Items, 2, "the held search answered")
			})
			<-s.in
		}
		held(search(w.key))
		held(search(w.key))

		before := w.requests(t)
		refused := func(u, cookie string) {
			t.Helper()
			start := time.Now()
			res, body := do(t, http.MethodGet, u, cookie)
			require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "a refusal waits BusyDelay: %s", u)
			require.Equal(t, "1", res.Header.Get("Retry-After"), u)
			if res.Header.Get("Content-Type") == newznab.XMLType {
				require.Equal(t, http.StatusOK, res.StatusCode)
				e := newznab.Decode[newznab.ErrorDoc](t, body)
				require.Equal(t, "500", e.Code, u)
				require.Equal(t, "Request limit reached", e.Description)
			} else {
				require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, u)
				require.Contains(t, string(body), "Too many requests")
			}
		}
		refused(search(w.key), "")
		refused(srv.URL+"/?q=ocean", w.key)
		refused(srv.URL+"/details/1?apikey="+w.key, "")
		refused(srv.URL+"/api?t=get&id=1&apikey="+w.key, "")
		require.Equal(t, before, w.requests(t), "a refused request counts nothing")

		held(search(bob)) // bob's first: within his bound and the handler's
		for _, u := range []string{search(bob), search("0123456789abcdef0123456789abcdef")} {
			refused(u, "")
		}
		res, _ := do(t, http.MethodGet, srv.URL+"/api?t=caps", "")
		require.Equal(t, http.StatusOK, res.StatusCode, "caps reads no store: never refused")

		// A client that leaves during a refusal's wait ends it: an hour's
		// wait would hold the server's Close.
		long, err := newznab.New(newznab.Config{Store: s, MaxRequests: 3, MaxRequestsPerKey: 2, BusyDelay: time.Hour})
		require.NoError(t, err)
		longSrv := httptest.NewServer(long)
		held(longSrv.URL + "/api?t=search&q=ocean&apikey=" + w.key)
		held(longSrv.URL + "/api?t=search&q=ocean&apikey=" + w.key)
		quick := &http.Client{Timeout: 100 * time.Millisecond}
		_, err = quick.Get(longSrv.URL + "/api?t=search&q=ocean&apikey=" + w.key)
		require.Error(t, err, "refused after an hour")

		close(s.hold)
		wg.Wait()
		longSrv.Close()
		for range 5 {
			res, _ := do(t, http.MethodGet, search("0123456789abcdef0123456789abcdef"), "")
			require.Empty(t, res.Header.Get("Retry-After"), "a bad key's slot is let go")
		}
		for range 3 {
			res, _ := do(t, http.MethodGet, search(w.key), "")
			require.Empty(t, res.Header.Get("Retry-After"), "alice's slots are let go")
			<-s.in
		}
		require.Equal(t, before+3, w.requests(t), "alice's three searches after: counted")

		_, err = newznab.New(newznab.Config{Store: s, MaxRequests: 2, MaxRequestsPerKey: 3})
		require.Error(t, err)
		_, err = newznab.New(newznab.Config{Store: s, MaxRequests: -1})
		require.Error(t, err)
	})
}
