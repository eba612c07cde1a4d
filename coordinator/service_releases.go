package coordinator

import (
	"context"

	"github.com/edgeindex/edgeindex/release"
)

// Releases pages through the releases built from the results feed, oldest
// first; q.Group selects those with a file read in that group.
func (s *Service) Releases(ctx context.Context, q release.Query) (release.Page, error) {
	return s.cfg.Store.Releases(ctx, q)
}

// ReleaseByID returns one release with its files and their parts.
func (s *Service) ReleaseByID(ctx context.Context, id int64) (release.Release, error) {
	return s.cfg.Store.ReleaseByID(ctx, id)
}
