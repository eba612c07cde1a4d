package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/sqlstore"
)

// Churn on one budget: takers take, renew and release with real clocks
// while others race; no slot number is ever held by two takers at once
// (checked by the takers' own record, under a lock, around each hold).
func TestConnSlotsChurnNeverDoubleHeld(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			url := b.URL(t)
			var mu sync.Mutex
			holding := map[int]string{}
			var wg sync.WaitGroup
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			errs := make(chan error, 64)
			for i := range 8 {
				st := open(t, url, sqlstore.Config{})
				who := fmt.Sprintf("h%d", i)
				wg.Go(func() {
					for ctx.Err() == nil {
						sl, ok, err := st.TakeSlot(ctx, "p", 3, who, 10*time.Second)
						if err != nil {
							if ctx.Err() == nil {
								errs <- err
							}
							return
						}
						if !ok {
							continue
						}
						mu.Lock()
						if h, dup := holding[sl.N]; dup {
							errs <- fmt.Errorf("slot %d taken by %s while %s holds it", sl.N, who, h)
						}
						holding[sl.N] = who
						mu.Unlock()
						if _, err := st.RenewSlot(context.WithoutCancel(ctx), sl, 10*time.Second); err != nil {
							errs <- err
						}
						mu.Lock()
						delete(holding, sl.N)
						mu.Unlock()
						if err := st.ReleaseSlot(context.WithoutCancel(ctx), sl); err != nil {
							errs <- err
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})
	}
}
