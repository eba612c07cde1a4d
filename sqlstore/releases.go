package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

var _ release.Store = (*Store)(nil)

const releaseCols = `id, set_key, name, poster, group_names, posted_us, last_us, files_seen, files_complete, files_expected,
	parts_seen, parts_expected, bytes, complete, updated_us, category, season, episode, episode_daily, grabs,
	pp_state, pp_attempts, pp_reason, pp_bodies, renamed, password, nfo IS NOT NULL AS has_nfo, imdb, tvdb`

// releaseRow is a row of releases.
type releaseRow struct {
	ID            int64          `db:"id"`
	SetKey        string         `db:"set_key"`
	Name          string         `db:"name"`
	Poster        string         `db:"poster"`
	Groups        string         `db:"group_names"`
	PostedUS      int64          `db:"posted_us"`
	LastUS        int64          `db:"last_us"`
	FilesSeen     int            `db:"files_seen"`
	FilesComplete int            `db:"files_complete"`
	FilesExpected int            `db:"files_expected"`
	PartsSeen     int64          `db:"parts_seen"`
	PartsExpected int64          `db:"parts_expected"`
	Bytes         int64          `db:"bytes"`
	Complete      bool           `db:"complete"`
	UpdatedUS     int64          `db:"updated_us"`
	Category      int            `db:"category"`
	Season        sql.NullInt64  `db:"season"`
	Episode       sql.NullInt64  `db:"episode"`
	Daily         sql.NullBool   `db:"episode_daily"`
	Grabs         int64          `db:"grabs"`
	PPState       int            `db:"pp_state"`
	PPAttempts    int            `db:"pp_attempts"`
	PPReason      sql.NullString `db:"pp_reason"`
	PPBodies      int            `db:"pp_bodies"`
	Renamed       bool           `db:"renamed"`
	Password      int            `db:"password"`
	HasNFO        bool           `db:"has_nfo"`
	IMDb          sql.NullString `db:"imdb"`
	TVDB          sql.NullString `db:"tvdb"`
}

func (r releaseRow) release() (release.Release, error) {
	out := release.Release{ID: r.ID, Key: r.SetKey, Name: r.Name, Poster: r.Poster,
		Posted: time.UnixMicro(r.PostedUS).UTC(), Last: time.UnixMicro(r.LastUS).UTC(),
		FilesSeen: r.FilesSeen, FilesComplete: r.FilesComplete, FilesExpected: r.FilesExpected,
		PartsSeen: r.PartsSeen, PartsExpected: r.PartsExpected, Bytes: r.Bytes, Complete: r.Complete,
		Updated: time.UnixMicro(r.UpdatedUS).UTC(), Category: r.Category, Grabs: r.Grabs,
		PostProc: release.PostProc{State: release.PostState(r.PPState), Attempts: r.PPAttempts, Reason: r.PPReason.String,
			Renamed: r.Renamed, Password: r.Password, HasNFO: r.HasNFO, IMDb: r.IMDb.String, TVDB: r.TVDB.String, Bodies: r.PPBodies}}
	if r.Season.Valid {
		out.Episode = &release.Episode{Season: int(r.Season.Int64), Episode: int(r.Episode.Int64), Daily: r.Daily.Bool}
	}
	if err := json.Unmarshal([]byte(r.Groups), &out.Groups); err != nil {
		return out, fmt.Errorf("release %d: groups: %w", r.ID, err)
	}
	return out, nil
}

// ReleaseCursor implements release.Store.
func (s *Store) ReleaseCursor(ctx context.Context, consumer string) (release.Cursor, error) {
	c := release.Cursor{Consumer: consumer}
	var row struct {
		Cursor string `db:"feed_after"`
		Items  int64  `db:"items"`
		AtUS   int64  `db:"at_us"`
	}
	err := s.rdb.GetContext(ctx, &row, s.q("SELECT feed_after, items, at_us FROM feed_cursors WHERE consumer = ?"), consumer)
	if errors.Is(err, sql.ErrNoRows) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("release cursor: %w", err)
	}
	c.After, c.Items = row.Cursor, row.Items
	if row.Items > 0 {
		c.At = time.UnixMicro(row.AtUS).UTC()
	}
	return c, nil
}

// inChunk bounds the parameters of one IN list.
const inChunk = 500

// placeholders returns "?,?,...,?" with n marks.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// fillParts sets the parts of each file that names its feed items
// (release_files keeps such a file without its parts, which its items
// hold): the items' parts merged as the builder merged them. A file
// without items kept its parts in its row.
func (s *Store) fillParts(ctx context.Context, q sqlx.QueryerContext, files []*release.File) error {
	byItem := map[int64][]*release.File{}
	var ids []int64
	for _, f := range files {
		if len(f.Items) == 0 {
			continue
		}
		f.Parts = nil
		for _, id := range f.Items {
			if _, ok := byItem[id]; !ok {
				ids = append(ids, id)
			}
			byItem[id] = append(byItem[id], f)
		}
	}
	slices.Sort(ids)
	merged := make(map[*release.File]*usenet.Binary, len(files))
	for part := range slices.Chunk(ids, inChunk) {
		rows, err := q.QueryContext(ctx, s.bind("SELECT id, value FROM items WHERE id IN ("+placeholders(len(part))+") ORDER BY id"), anys(part)...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var value []byte
			if err := rows.Scan(&id, &value); err != nil {
				rows.Close()
				return err
			}
			var b usenet.Binary
			if err := release.DecodeBinary(value, &b); err != nil {
				rows.Close()
				return fmt.Errorf("item %d: %w", id, err)
			}
			for _, f := range byItem[id] {
				if m, ok := merged[f]; ok {
					*m = usenet.Merge(*m, b)
				} else {
					merged[f] = &b
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for f, b := range merged {
		f.Parts = b.Parts
	}
	return nil
}

// Releases implements release.Store.
func (s *Store) Releases(ctx context.Context, q release.Query) (release.Page, error) {
	q, err := release.CheckQuery(q)
	if err != nil {
		return release.Page{}, err
	}
	after := int64(0)
	if q.After != "" {
		after, err = strconv.ParseInt(q.After, 10, 64)
		if err != nil || after < 0 {
			return release.Page{}, fmt.Errorf("releases: %w: %q", release.ErrBadCursor, q.After)
		}
	}
	var rows []releaseRow
	if q.Group == "" {
		err = s.rdb.SelectContext(ctx, &rows, s.q("SELECT "+releaseCols+" FROM releases WHERE id > ? ORDER BY id LIMIT ?"), after, q.Limit)
	} else {
		if err := s.knownNewsgroup(ctx, q.Group); err != nil {
			return release.Page{}, fmt.Errorf("releases: %w", err)
		}
		// A provider's group (NEWSGROUP@PROVIDER, as status shows it)
		// lists its newsgroup's releases: a release's groups are
		// newsgroups, its parts merged over the providers.
		newsgroup, _ := grouplease.SplitGroup(q.Group)
		err = s.rdb.SelectContext(ctx, &rows, s.q(`SELECT `+prefixed("r.", releaseCols)+` FROM release_groups g
			JOIN releases r ON r.id = g.release_id WHERE g.group_name = ? AND g.release_id > ? ORDER BY g.release_id LIMIT ?`),
			newsgroup, after, q.Limit)
	}
	if err != nil {
		return release.Page{}, fmt.Errorf("releases: %w", err)
	}
	page := release.Page{Releases: make([]release.Release, 0, len(rows)), Next: q.After}
	for _, row := range rows {
		r, err := row.release()
		if err != nil {
			return release.Page{}, fmt.Errorf("releases: %w", err)
		}
		page.Releases = append(page.Releases, r)
		page.Next = strconv.FormatInt(r.ID, 10)
	}
	return page, nil
}

// knownNewsgroup returns nil when the catalog has the group, or the
// newsgroup as read from a named provider (NEWSGROUP@PROVIDER): a
// release's groups are newsgroups, whichever providers they were read
// from. Otherwise it returns an error wrapping edgeindex.ErrNotFound.
func (s *Store) knownNewsgroup(ctx context.Context, name string) error {
	_, err := s.Group(ctx, name)
	if !errors.Is(err, edgeindex.ErrNotFound) {
		return err
	}
	var n int
	prefix := name + "@"
	if qerr := s.rdb.GetContext(ctx, &n, s.q("SELECT count(*) FROM groups WHERE substr(name, 1, ?) = ?"),
		utf8.RuneCountInString(prefix), prefix); qerr != nil {
		return qerr
	}
	if n == 0 {
		return err
	}
	return nil
}

// prefixed puts p before each of the comma-separated columns.
func prefixed(p, cols string) string {
	fields := strings.Split(cols, ",")
	for i, f := range fields {
		fields[i] = p + strings.TrimSpace(f)
	}
	return strings.Join(fields, ", ")
}

// ReleaseByID implements release.Store. It reads the release, its files
// and their items in one read transaction (repeatable read on
// PostgreSQL), so the totals and the files agree.
func (s *Store) ReleaseByID(ctx context.Context, id int64) (release.Release, error) {
	return s.readRelease(ctx, id, func(tx *sqlx.Tx, r *release.Release, stored []storedFile) error {
		r.Files = make([]release.File, len(stored))
		files := make([]*release.File, len(stored))
		for i := range stored {
			r.Files[i] = stored[i].File
			files[i] = &r.Files[i]
		}
		return s.fillParts(ctx, tx, files)
	})
}

// ReleaseDetails implements newznab.Store: release id and its first
// files files by name, each without its parts but with Seen, which
// counts them. It reads no part, but a file's written before its count
// was kept with it (such a file's items are read to count them).
func (s *Store) ReleaseDetails(ctx context.Context, id int64, files int) (release.Release, error) {
	if files <= 0 {
		return s.readRelease(ctx, id, nil)
	}
	return s.readRelease(ctx, id, func(tx *sqlx.Tx, r *release.Release, stored []storedFile) error {
		stored = stored[:min(len(stored), files)]
		r.Files = make([]release.File, len(stored))
		var uncounted []*release.File
		for i, f := range stored {
			r.Files[i] = f.File
			r.Files[i].Parts = nil
			n, ok := f.count()
			if !ok {
				uncounted = append(uncounted, &r.Files[i])
			}
			r.Files[i].Seen = n
		}
		if err := s.fillParts(ctx, tx, uncounted); err != nil {
			return err
		}
		for _, f := range uncounted {
			f.Seen, f.Parts = len(f.Parts), nil
		}
		return nil
	})
}

// readRelease reads release id in a read transaction of the front door's
// pool and, with fn, its files as stored, for fn to fill in the same
// transaction, so the totals and the files agree.
func (s *Store) readRelease(ctx context.Context, id int64, fn func(tx *sqlx.Tx, r *release.Release, stored []storedFile) error) (release.Release, error) {
	var r release.Release
	err := txOn(ctx, s.fdb, s.d.snapshotRead(), func(tx *sqlx.Tx) error {
		var err error
		if r, err = s.releaseRow(ctx, tx, id); err != nil || fn == nil {
			return err
		}
		stored, err := s.storedFiles(ctx, tx, id)
		if err != nil {
			return err
		}
		for i := range stored {
			stored[i].RealName = r.PostProc.FileNames[stored[i].Key]
		}
		if err := fn(tx, &r, stored); err != nil {
			return fmt.Errorf("release %d: parts: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return release.Release{}, err
	}
	return r, nil
}

// partsAtOnce bounds the parts ReleaseFiles holds at once (but for a
// file that has more alone).
const partsAtOnce = 10_000

// ReleaseFiles implements newznab.Store: it calls each with release id's
// files by name, each with its parts, reading the parts of a few files
// at a time (at most partsAtOnce parts, by the counts kept with them),
// so what it holds does not grow with the release. It reads the list of
// files once, then each group of them in a statement of its own, and
// holds no transaction while each runs: a feed item never changes once
// stored. An unknown release is release.ErrNotFound; an error of each
// ends it, returned.
func (s *Store) ReleaseFiles(ctx context.Context, id int64, each func(release.File) error) error {
	var stored []storedFile
	if _, err := s.readRelease(ctx, id, func(_ *sqlx.Tx, _ *release.Release, files []storedFile) error {
		stored = files
		return nil
	}); err != nil {
		return err
	}
	for len(stored) > 0 {
		n, parts := 0, 0
		for n < len(stored) && (n == 0 || parts+stored[n].parts() <= partsAtOnce) {
			parts += stored[n].parts()
			n++
		}
		group := make([]*release.File, n)
		for i := range group {
			group[i] = &stored[i].File
		}
		if err := s.fillParts(ctx, s.fdb, group); err != nil {
			return fmt.Errorf("release %d: parts: %w", id, err)
		}
		for _, f := range group {
			if err := each(*f); err != nil {
				return err
			}
		}
		clear(stored[:n]) // their parts are let go
		stored = stored[n:]
	}
	return nil
}

// count is how many parts f has, when its row says: the parts in it, or
// the count kept beside them in its items; false for a file written
// before counts were kept.
func (f *storedFile) count() (int, bool) {
	if len(f.Items) == 0 {
		return len(f.Parts), true
	}
	return f.Seen, f.Seen > 0
}

// parts is how many parts f has, or for a file whose count was not kept,
// one an item.
func (f *storedFile) parts() int {
	if n, ok := f.count(); ok {
		return n
	}
	return len(f.Items)
}

// releaseRow reads release id, with its NFO and without its files.
func (s *Store) releaseRow(ctx context.Context, tx *sqlx.Tx, id int64) (release.Release, error) {
	var row struct {
		releaseRow
		NFO   sql.NullString `db:"nfo"`
		Files sql.NullString `db:"pp_files"`
	}
	err := tx.GetContext(ctx, &row, s.q("SELECT "+releaseCols+", nfo, pp_files FROM releases WHERE id = ?"), id)
	if errors.Is(err, sql.ErrNoRows) {
		return release.Release{}, fmt.Errorf("%w: no release %d", release.ErrNotFound, id)
	}
	if err != nil {
		return release.Release{}, fmt.Errorf("release %d: %w", id, err)
	}
	r, err := row.release()
	if err != nil {
		return r, err
	}
	r.PostProc.NFO = row.NFO.String
	if row.Files.Valid {
		if err := json.Unmarshal([]byte(row.Files.String), &r.PostProc.FileNames); err != nil {
			return r, fmt.Errorf("release %d: file names: %w", id, err)
		}
	}
	return r, nil
}

// storedFiles reads the files of release id as release_files keeps them
// (a file whose items hold its parts without them), sorted by name, then
// key.
func (s *Store) storedFiles(ctx context.Context, tx *sqlx.Tx, id int64) ([]storedFile, error) {
	var values []string
	if err := tx.SelectContext(ctx, &values, s.q("SELECT value FROM release_files WHERE release_id = ?"), id); err != nil {
		return nil, fmt.Errorf("release %d: %w", id, err)
	}
	files := make([]storedFile, len(values))
	for i, v := range values {
		if err := json.Unmarshal([]byte(v), &files[i]); err != nil {
			return nil, fmt.Errorf("release %d: file: %w", id, err)
		}
	}
	slices.SortFunc(files, func(a, b storedFile) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return files, nil
}
