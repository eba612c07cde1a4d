package coordinator

import (
	"context"
	"io"

	"github.com/edgeindex/edgeindex/nzb"
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

// WriteNZB writes the NZB of release id to w, a file at a time as the
// store reads them, so its memory does not grow with the release. begin
// is called with the release before the first byte is written; an error
// after that has cut the NZB. A release with nothing to download is
// nzb.ErrEmpty, and begin is not called.
func (s *Service) WriteNZB(ctx context.Context, id int64, w io.Writer, begin func(release.Release)) (began bool, err error) {
	rel, err := s.cfg.Store.ReleaseDetails(ctx, id, 0)
	if err != nil {
		return false, err
	}
	files := func(each func(release.File) error) error { return s.cfg.Store.ReleaseFiles(ctx, id, each) }
	return nzb.Stream(w, rel, files, func() error { begin(rel); return nil })
}
