package coordinator_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/lease"
	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// TestFrontDoorAttack: one key sends 64 searches at once, over and over,
// with a filter that reads every release, against the Newznab handler
// over the coordinator's own store, while 32 workers lease and give back
// ranges. Every lease is granted within its 5 s deadline, /readyz answers
// 200 throughout, another user's searches are all answered, and each of
// the attacker's past its key's bound of 2 is refused (code 500, Request
// limit reached) after the refusal's wait, rather than queued. The
// latencies are logged beside the same leases without the attack, not
// asserted.
func TestFrontDoorAttack(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		// One backend at a time: two attacks at once would measure each
		// other.
		t.Run(b.Name, func(t *testing.T) {
			ctx := t.Context()
			st, err := sqlstore.Open(ctx, b.URL(t), sqlstore.Config{})
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			h := newHarnessStore(t, st, nil)
			rows := 20_000
			if b.Name == "postgres" {
				rows = 200_000
			}
			_, err = st.DB().ExecContext(ctx, st.DB().Rebind(`WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
				INSERT INTO releases (set_key, name, poster, group_names, posted_us, last_us, files_seen, files_complete,
				files_expected, parts_seen, parts_expected, bytes, complete, updated_us, category, search_words)
				SELECT 'k' || i, 'Many.' || i, 'p', '["g"]', CAST(i AS BIGINT), CAST(i AS BIGINT), 1, 1, 0, 1, 1, 1000 + i, ?, 0, 8010, 'many ' || i FROM n`),
				rows, true)
			require.NoError(t, err)
			keys := map[string]string{}
			for _, name := range []string{"mallory", "alice"} {
				k, err := newznab.NewKey()
				require.NoError(t, err)
				require.NoError(t, st.AddUser(ctx, newznab.User{Name: name, KeyHash: newznab.HashKey(k)}))
				keys[name] = k
			}
			nz, err := newznab.New(newznab.Config{Store: st})
			require.NoError(t, err)
			front := httptest.NewServer(nz)
			t.Cleanup(front.Close)
			h.group("attack", false, 1, 10_000, lease.LaneHistory) // 100 ranges
			tokens := make([]string, 32)
			for i := range tokens {
				tokens[i] = h.addNode(fmt.Sprintf("w%02d", i))
			}

			client := &http.Client{Timeout: 5 * time.Second}
			var failures sync.Map
			fail := func(what string, err error) { failures.Store(what+": "+err.Error(), true) }
			get := func(u, token string, method string, leaseToken int64) (int, []byte, error) {
				req, err := http.NewRequestWithContext(ctx, method, u, nil)
				if err != nil {
					return 0, nil, err
				}
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				if leaseToken != 0 {
					req.Header.Set("Lease-Token", fmt.Sprint(leaseToken))
				}
				res, err := client.Do(req)
				if err != nil {
					return 0, nil, err
				}
				defer res.Body.Close()
				body, err := io.ReadAll(res.Body)
				return res.StatusCode, body, err
			}

			// work runs each worker for n leases, each given back, and
			// returns their latencies, sorted.
			work := func(tokens []string, n int) []time.Duration {
				var mu sync.Mutex
				var took []time.Duration
				var wg sync.WaitGroup
				for _, tok := range tokens {
					wg.Go(func() {
						for range n {
							start := time.Now()
							code, body, err := get(h.http.URL+"/v1/lease", tok, "POST", 0)
							d := time.Since(start)
							if err != nil || code != http.StatusOK {
								fail("lease", fmt.Errorf("%d %v %.200s", code, err, body))
								continue
							}
							mu.Lock()
							took = append(took, d)
							mu.Unlock()
							var l lease.Lease
							if err := json.Unmarshal(body, &l); err != nil {
								fail("lease", err)
								continue
							}
							code, body, err = get(fmt.Sprintf("%s/v1/ranges/%d/release", h.http.URL, l.Range.ID), tok, "POST", l.Token)
							if err != nil || code != http.StatusOK {
								fail("release", fmt.Errorf("%d %v %.200s", code, err, body))
							}
						}
					})
				}
				wg.Wait()
				slices.Sort(took)
				return took
			}
			// The same work without the attack first: the baseline.
			quiet := work(tokens, 20)

			stop := make(chan struct{})
			var attackers sync.WaitGroup
			var answered, refused atomic.Int64
			slow := front.URL + "/api?t=search&q=many&minsize=1&apikey=" + keys["mallory"]
			for range 64 {
				attackers.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						code, body, err := get(slow, "", "GET", 0)
						switch {
						case err != nil:
							fail("attack", err)
						case strings.Contains(string(body), `code="500"`):
							refused.Add(1)
						case code == http.StatusOK:
							answered.Add(1)
						}
					}
				})
			}
			var probes sync.WaitGroup
			var ready, notReady atomic.Int64
			probes.Go(func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					code, _, err := get(h.http.URL+"/readyz", "", "GET", 0)
					if err != nil || code != http.StatusOK {
						notReady.Add(1)
						continue
					}
					ready.Add(1)
				}
			})
			var normal []time.Duration
			probes.Go(func() {
				for range 10 {
					start := time.Now()
					code, body, err := get(front.URL+"/api?t=search&q=many+7&apikey="+keys["alice"], "", "GET", 0)
					switch {
					case err != nil:
						fail("alice", err)
					case code != http.StatusOK || !strings.Contains(string(body), "<item>"):
						fail("alice", fmt.Errorf("status %d: %.200s", code, body))
					}
					normal = append(normal, time.Since(start))
				}
			})

			// The attack is kept up for 3 s: several of the refusals'
			// waits.
			var leases []time.Duration
			for begun := time.Now(); time.Since(begun) < 3*time.Second; {
				leases = append(leases, work(tokens, 20)...)
			}
			slices.Sort(leases)
			close(stop)
			attackers.Wait()
			probes.Wait()

			var msgs []string
			failures.Range(func(k, _ any) bool { msgs = append(msgs, k.(string)); return true })
			require.Empty(t, msgs, "every lease, release and normal search answered")
			require.Zero(t, notReady.Load(), "/readyz answered 200 throughout (%d probes)", ready.Load())
			require.Positive(t, ready.Load())
			require.Zero(t, len(leases)%(32*20), "every lease granted")
			require.GreaterOrEqual(t, refused.Load(), int64(64-newznab.DefaultMaxRequestsPerKey),
				"every search past the key's bound was refused")
			slices.Sort(normal)
			p := func(d []time.Duration, q int) time.Duration { return d[len(d)*q/100] }
			t.Logf("%d leases under attack: p50 %v, p99 %v; without: p50 %v, p99 %v; alice's searches: max %v; mallory's: %d answered, %d refused; %d readyz probes",
				len(leases), p(leases, 50), p(leases, 99), p(quiet, 50), p(quiet, 99), normal[len(normal)-1],
				answered.Load(), refused.Load(), ready.Load())
		})
	}
}
