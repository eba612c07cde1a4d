package sqlstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/edgeindex/edgeindex/release"
)

// A release's post-processing is leased when due, retried after a
// failure until its tries are spent, and once done renames it under the
// same id: found by its new name and its old, in the new name's category.
func TestPostProcStore(t *testing.T) {
	t.Parallel()
	openEach(t, func(t *testing.T, _ string, s *Store) {
		ctx := t.Context()
		ids := insertRows(t, s, []row{{name: "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6", category: release.CatHashed}, {name: "Plain.Release.2024", category: 8010}}, true)
		hashed, plain := ids["a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"], ids["Plain.Release.2024"]
		now := time.Now()
		pending, failed, err := s.PostProcCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, [2]int64{2, 0}, [2]int64{pending, failed})

		due, err := s.PostProcDue(ctx, now, time.Minute, 10)
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{hashed, plain}, due)
		due, err = s.PostProcDue(ctx, now, time.Minute, 10)
		require.NoError(t, err)
		require.Empty(t, due, "leased for a minute")
		due, err = s.PostProcDue(ctx, now.Add(2*time.Minute), time.Minute, 1)
		require.NoError(t, err)
		require.Len(t, due, 1, "a lease run out is taken again, n at most")

		// The plain one fails twice, then for good at its third try.
		for i := range 3 {
			require.NoError(t, s.PostProcFailed(ctx, plain, "the provider has no such article", now.Add(time.Hour), 3))
			r, err := s.ReleaseByID(ctx, plain)
			require.NoError(t, err)
			require.Equal(t, i+1, r.PostProc.Attempts)
			require.Equal(t, "the provider has no such article", r.PostProc.Reason)
			if i < 2 {
				require.Equal(t, release.PostPending, r.PostProc.State)
			} else {
				require.Equal(t, release.PostFailed, r.PostProc.State)
			}
		}
		_, failed, err = s.PostProcCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), failed)

		require.NoError(t, s.PostProcDone(ctx, hashed, "Ocean.Documentary.2024.1080p.WEB.x264-GRP",
			release.PostProc{Password: 1, HasNFO: true, NFO: "Title: Ocean", IMDb: "tt1234567", Bodies: 3}))
		r, err := s.ReleaseByID(ctx, hashed)
		require.NoError(t, err)
		require.Equal(t, hashed, r.ID, "the same id")
		require.Equal(t, "Ocean.Documentary.2024.1080p.WEB.x264-GRP", r.Name)
		require.Equal(t, release.CatMovieHD, r.Category)
		require.Equal(t, release.PostProc{State: release.PostDone, Renamed: true, Password: 1, HasNFO: true, NFO: "Title: Ocean",
			IMDb: "tt1234567", Bodies: 3}, r.PostProc)
		for _, words := range [][]string{{"ocean", "documentary"}, {"a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"}} {
			f, err := s.SearchReleases(ctx, release.Search{Words: words})
			require.NoError(t, err)
			require.Len(t, f.Releases, 1, "%v", words)
			require.Equal(t, hashed, f.Releases[0].ID)
			require.Equal(t, 1, f.Releases[0].PostProc.Password)
			require.True(t, f.Releases[0].PostProc.HasNFO)
			require.Empty(t, f.Releases[0].PostProc.NFO, "a search reads no NFO")
		}
		f, err := s.SearchReleases(ctx, release.Search{NoPassword: true})
		require.NoError(t, err)
		require.Len(t, f.Releases, 1)
		require.Equal(t, plain, f.Releases[0].ID, "password=0 hides the passworded one")
		pending, _, err = s.PostProcCounts(ctx)
		require.NoError(t, err)
		require.Zero(t, pending)

		// A release that gains files while it is post-processed (the
		// builder queues it again) stays pending, with what was found.
		more := insertRows(t, s, []row{{name: "Growing.Release.2024", category: 8010}}, true)["Growing.Release.2024"]
		due, err = s.PostProcDue(ctx, now, time.Minute, 10)
		require.NoError(t, err)
		require.Equal(t, []int64{more}, due)
		_, err = s.db.ExecContext(ctx, s.q("UPDATE releases SET pp_state = 0, pp_next_us = 0 WHERE id = ?"), more)
		require.NoError(t, err)
		require.NoError(t, s.PostProcDone(ctx, more, "", release.PostProc{HasNFO: true, NFO: "x"}))
		r, err = s.ReleaseByID(ctx, more)
		require.NoError(t, err)
		require.Equal(t, release.PostPending, r.PostProc.State)
		require.True(t, r.PostProc.HasNFO)
	})
}
