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
	"unicode"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/grouplease"
	"github.com/edgeindex/edgeindex/release"
	"github.com/edgeindex/edgeindex/usenet"
)

var _ release.Store = (*Store)(nil)

const releaseCols = `id, set_key, name, poster, group_names, posted_us, last_us, files_seen, files_complete, files_expected,
	parts_seen, parts_expected, bytes, complete, updated_us, category, season, episode, episode_daily, grabs`

// releaseRow is a row of releases.
type releaseRow struct {
	ID            int64         `db:"id"`
	SetKey        string        `db:"set_key"`
	Name          string        `db:"name"`
	Poster        string        `db:"poster"`
	Groups        string        `db:"group_names"`
	PostedUS      int64         `db:"posted_us"`
	LastUS        int64         `db:"last_us"`
	FilesSeen     int           `db:"files_seen"`
	FilesComplete int           `db:"files_complete"`
	FilesExpected int           `db:"files_expected"`
	PartsSeen     int64         `db:"parts_seen"`
	PartsExpected int64         `db:"parts_expected"`
	Bytes         int64         `db:"bytes"`
	Complete      bool          `db:"complete"`
	UpdatedUS     int64         `db:"updated_us"`
	Category      int           `db:"category"`
	Season        sql.NullInt64 `db:"season"`
	Episode       sql.NullInt64 `db:"episode"`
	Daily         sql.NullBool  `db:"episode_daily"`
	Grabs         int64         `db:"grabs"`
}

func (r releaseRow) release() (release.Release, error) {
	out := release.Release{ID: r.ID, Key: r.SetKey, Name: r.Name, Poster: r.Poster,
		Posted: time.UnixMicro(r.PostedUS).UTC(), Last: time.UnixMicro(r.LastUS).UTC(),
		FilesSeen: r.FilesSeen, FilesComplete: r.FilesComplete, FilesExpected: r.FilesExpected,
		PartsSeen: r.PartsSeen, PartsExpected: r.PartsExpected, Bytes: r.Bytes, Complete: r.Complete,
		Updated: time.UnixMicro(r.UpdatedUS).UTC(), Category: r.Category, Grabs: r.Grabs}
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

// PutReleases implements release.Store: in one transaction it checks the
// consumer's cursor, reads what release.Needs names, lets release.Assign
// place the page's files, writes releases, groups and files (multi-row
// inserts), and moves the cursor. On PostgreSQL it first takes a
// transaction-level advisory lock, so release writers commit one at a time
// and release ids commit in order: a reader paging by id skips none.
func (s *Store) PutReleases(ctx context.Context, u release.Update) (release.Applied, error) {
	var applied release.Applied
	if u.Consumer == "" || u.Window < 0 || u.Items < len(u.Files) {
		return applied, edgeindex.Invalidf("releases: an update needs a consumer, a window of 0 or more, and items for its %d files", len(u.Files))
	}
	if _, _, err := parseCursor(u.Next); err != nil || u.Next == "" {
		return applied, edgeindex.Invalidf("releases: next %q is no feed cursor", u.Next)
	}
	for i, f := range u.Files {
		if f.Key == "" || f.Date.IsZero() {
			return applied, edgeindex.Invalidf("releases: file %d has no key or no date", i)
		}
	}
	now := s.nowMicros()
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		if s.d.advisoryLocks() {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.releases'))"); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO feed_cursors (consumer, feed_after, items, at_us) VALUES (?, '', 0, ?)
			ON CONFLICT (consumer) DO NOTHING`), u.Consumer, now); err != nil {
			return err
		}
		var cur string
		if err := tx.GetContext(ctx, &cur, s.q("SELECT feed_after FROM feed_cursors WHERE consumer = ? {forupdate}"), u.Consumer); err != nil {
			return err
		}
		if cur != u.After {
			return fmt.Errorf("%w: consumer %q is at %q, the page was read from %q", release.ErrCursorMoved, u.Consumer, cur, u.After)
		}
		need := release.Needs(u)
		stored, err := s.releaseFiles(ctx, tx, need.Keys)
		if err != nil {
			return err
		}
		rels, err := s.releaseCandidates(ctx, tx, need, stored)
		if err != nil {
			return err
		}
		ch := release.Assign(u, stored, rels, time.UnixMicro(now).UTC())
		ids, err := s.writeReleases(ctx, tx, ch)
		if err != nil {
			return err
		}
		if err := s.writeReleaseFiles(ctx, tx, ch.Files, ids); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q("UPDATE feed_cursors SET feed_after = ?, items = items + ?, at_us = ? WHERE consumer = ?"),
			u.Next, u.Items, now, u.Consumer); err != nil {
			return err
		}
		applied = release.Applied{Created: len(ch.New), Changed: len(ch.Changed), Files: len(ch.Files)}
		return nil
	})
	if err != nil {
		if errors.Is(err, release.ErrCursorMoved) {
			return release.Applied{}, err
		}
		return release.Applied{}, fmt.Errorf("releases: %w", err)
	}
	return applied, nil
}

// inChunk bounds the parameters of one IN list.
const inChunk = 500

// placeholders returns "?,?,...,?" with n marks.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// releaseFiles reads the stored files of keys, with their parts.
func (s *Store) releaseFiles(ctx context.Context, tx *sqlx.Tx, keys []string) (map[string]release.Stored, error) {
	var found []release.Stored
	for part := range slices.Chunk(keys, inChunk) {
		args := make([]any, len(part))
		for i, k := range part {
			args[i] = k
		}
		rows, err := tx.QueryContext(ctx, s.bind("SELECT key, release_id, value FROM release_files WHERE key IN ("+placeholders(len(part))+")"), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var key, value string
			var id int64
			if err := rows.Scan(&key, &id, &value); err != nil {
				rows.Close()
				return nil, err
			}
			var f release.File
			if err := json.Unmarshal([]byte(value), &f); err != nil {
				rows.Close()
				return nil, fmt.Errorf("release file %s: %w", key, err)
			}
			found = append(found, release.Stored{Release: id, File: f})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	files := make([]*release.File, len(found))
	for i := range found {
		files[i] = &found[i].File
	}
	if err := s.fillParts(ctx, tx, files); err != nil {
		return nil, err
	}
	out := make(map[string]release.Stored, len(found))
	for _, st := range found {
		out[st.File.Key] = st
	}
	return out, nil
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
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rows, err := q.QueryContext(ctx, s.bind("SELECT id, value FROM items WHERE id IN ("+placeholders(len(part))+") ORDER BY id"), args...)
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

// releaseCandidates reads the releases of the stored files and those a new
// file may join.
func (s *Store) releaseCandidates(ctx context.Context, tx *sqlx.Tx, need release.Lookup, stored map[string]release.Stored) ([]release.Release, error) {
	seen := map[int64]bool{}
	var out []release.Release
	scan := func(query string, args []any) error {
		var rows []releaseRow
		if err := tx.SelectContext(ctx, &rows, s.bind(query), args...); err != nil {
			return err
		}
		for _, row := range rows {
			if seen[row.ID] {
				continue
			}
			seen[row.ID] = true
			r, err := row.release()
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	}
	var ids []int64
	for _, st := range stored {
		ids = append(ids, st.Release)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for part := range slices.Chunk(ids, inChunk) {
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		if err := scan("SELECT "+releaseCols+" FROM releases WHERE id IN ("+placeholders(len(part))+")", args); err != nil {
			return nil, err
		}
	}
	for part := range slices.Chunk(need.Sets, inChunk) {
		args := make([]any, 0, len(part)+2)
		for _, k := range part {
			args = append(args, k)
		}
		args = append(args, need.To.UnixMicro(), need.From.UnixMicro())
		if err := scan("SELECT "+releaseCols+" FROM releases WHERE set_key IN ("+placeholders(len(part))+
			") AND posted_us <= ? AND last_us >= ?", args); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// releaseWriteCols are the columns writeReleases writes, id aside, and
// releaseWriteN counts them. The grabs are the API's to count, never the
// builder's.
const (
	releaseWriteCols = `set_key, name, poster, group_names, posted_us, last_us, files_seen, files_complete, files_expected,
	parts_seen, parts_expected, bytes, complete, updated_us, category, season, episode, episode_daily, search_words`
	releaseWriteN = 19
)

// releaseArgs appends r's values for releaseWriteCols. A release the
// builder gave no category gets release.Categorize's, and one without an
// episode release.ParseEpisode's, so that a search finds what the rules
// say whether or not the builder set them.
func releaseArgs(args []any, r release.Release) ([]any, error) {
	gs, err := json.Marshal(nonNil(r.Groups))
	if err != nil {
		return nil, err
	}
	cat, season, episode, daily := classify(r)
	return append(args, r.Key, r.Name, r.Poster, string(gs), r.Posted.UnixMicro(), r.Last.UnixMicro(), r.FilesSeen,
		r.FilesComplete, r.FilesExpected, r.PartsSeen, r.PartsExpected, r.Bytes, r.Complete, r.Updated.UnixMicro(),
		cat, season, episode, daily, searchText(r.Name)), nil
}

// classify returns the category and episode columns of r.
func classify(r release.Release) (category int, season, episode sql.NullInt64, daily sql.NullBool) {
	category = r.Category
	if category == 0 {
		category = release.Categorize(r.Name, r.Groups)
	}
	ep := r.Episode
	if ep == nil {
		ep = release.ParseEpisode(r.Name)
	}
	if ep != nil {
		season = sql.NullInt64{Int64: int64(ep.Season), Valid: true}
		episode = sql.NullInt64{Int64: int64(ep.Episode), Valid: true}
		daily = sql.NullBool{Bool: ep.Daily, Valid: true}
	}
	return category, season, episode, daily
}

// maxIndexWords bounds the distinct words searchText keeps of a name.
const maxIndexWords = 256

// searchText is what the search index holds of a name: its words as
// release.SearchWords splits them, but only those of at most
// release.MaxSearchWord bytes (a longer one can never be searched for:
// release.CheckSearch refuses it), and only the first maxIndexWords
// distinct ones, joined by spaces. So the text is at most about 16 KB
// whatever the name: a name of a megabyte of words would make
// PostgreSQL's tsvector fail, and the builder retry its page forever. It
// splits the name itself, with SearchWords' rule (a test holds them
// alike), so that it stops at maxIndexWords rather than collect every
// word of a long name.
func searchText(name string) string {
	var keep []string
	seen := make(map[string]bool)
	for w := range strings.FieldsFuncSeq(name, func(r rune) bool {
		return r == utf8.RuneError || !(unicode.IsLetter(r) || unicode.IsDigit(r))
	}) {
		if len(keep) == maxIndexWords {
			break
		}
		w = strings.ToLower(w)
		if len(w) <= release.MaxSearchWord && !seen[w] {
			seen[w] = true
			keep = append(keep, w)
		}
	}
	return strings.Join(keep, " ")
}

// rowsOf returns n rows of k placeholders for a VALUES list.
func rowsOf(n, k int) string {
	return strings.TrimSuffix(strings.Repeat("("+placeholders(k)+"),", n), ",")
}

// writeReleases creates the new releases and updates the changed ones,
// with their groups, in multi-row statements (an upsert updates the
// changed ones, in both dialects). It returns the id of each new release
// by its placeholder id.
func (s *Store) writeReleases(ctx context.Context, tx *sqlx.Tx, ch release.Changes) (map[int64]int64, error) {
	const perStmt = 250 // 20 parameters a row, well under both dialects' limits
	ids := make(map[int64]int64, len(ch.New))
	// New releases of one page differ in key or in posting date by more
	// than the window, so (key, posted) names each one in RETURNING.
	type newKey struct {
		key    string
		posted int64
	}
	temp := make(map[newKey]int64, len(ch.New))
	for _, r := range ch.New {
		temp[newKey{r.Key, r.Posted.UnixMicro()}] = r.ID
	}
	if len(temp) != len(ch.New) {
		return nil, fmt.Errorf("two new releases with one key and one date")
	}
	var groups []any // group_name, release_id pairs
	for part := range slices.Chunk(ch.New, perStmt) {
		args := make([]any, 0, releaseWriteN*len(part))
		for _, r := range part {
			var err error
			if args, err = releaseArgs(args, r); err != nil {
				return nil, err
			}
		}
		rows, err := tx.QueryContext(ctx, s.bind("INSERT INTO releases ("+releaseWriteCols+") VALUES "+rowsOf(len(part), releaseWriteN)+
			" RETURNING id, set_key, posted_us"), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k newKey
			var id int64
			if err := rows.Scan(&id, &k.key, &k.posted); err != nil {
				rows.Close()
				return nil, err
			}
			ids[temp[k]] = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	for _, r := range ch.New {
		if ids[r.ID] == 0 {
			return nil, fmt.Errorf("new release %q: no id returned", r.Name)
		}
		for _, g := range r.Groups {
			groups = append(groups, g, ids[r.ID])
		}
	}
	for part := range slices.Chunk(ch.Changed, perStmt) {
		args := make([]any, 0, (releaseWriteN+1)*len(part))
		for _, r := range part {
			args = append(args, r.ID)
			var err error
			if args, err = releaseArgs(args, r); err != nil {
				return nil, err
			}
			for _, g := range r.Groups {
				groups = append(groups, g, r.ID)
			}
		}
		if _, err := tx.ExecContext(ctx, s.bind("INSERT INTO releases (id, "+releaseWriteCols+") VALUES "+rowsOf(len(part), releaseWriteN+1)+
			` ON CONFLICT (id) DO UPDATE SET group_names = excluded.group_names, posted_us = excluded.posted_us,
			last_us = excluded.last_us, files_seen = excluded.files_seen, files_complete = excluded.files_complete,
			files_expected = excluded.files_expected, parts_seen = excluded.parts_seen, parts_expected = excluded.parts_expected,
			bytes = excluded.bytes, complete = excluded.complete, updated_us = excluded.updated_us,
			name = excluded.name, category = excluded.category, season = excluded.season, episode = excluded.episode,
			episode_daily = excluded.episode_daily, search_words = excluded.search_words`), args...); err != nil {
			return nil, err
		}
	}
	for part := range slices.Chunk(groups, 2*inChunk) {
		if _, err := tx.ExecContext(ctx, s.bind("INSERT INTO release_groups (group_name, release_id) VALUES "+rowsOf(len(part)/2, 2)+
			" ON CONFLICT DO NOTHING"), part...); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// writeReleaseFiles writes the page's files, new and merged, with
// multi-row upserts.
func (s *Store) writeReleaseFiles(ctx context.Context, tx *sqlx.Tx, files []release.Placed, ids map[int64]int64) error {
	args := make([]any, 0, 3*len(files))
	for _, p := range files {
		id := p.Release
		if id < 0 {
			id = ids[id]
		}
		f := p.File
		if len(f.Items) > 0 {
			f.Parts = nil // its items hold them
		}
		value, err := json.Marshal(f)
		if err != nil {
			return err
		}
		args = append(args, f.Key, id, string(value))
	}
	for part := range slices.Chunk(args, 3*inChunk) {
		if _, err := tx.ExecContext(ctx, s.bind("INSERT INTO release_files (key, release_id, value) VALUES "+rowsOf(len(part)/3, 3)+
			" ON CONFLICT (key) DO UPDATE SET release_id = excluded.release_id, value = excluded.value"), part...); err != nil {
			return err
		}
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
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
	tx, err := s.rdb.BeginTxx(ctx, s.d.snapshotRead())
	if err != nil {
		return release.Release{}, fmt.Errorf("release %d: %w", id, err)
	}
	defer tx.Rollback()
	var row releaseRow
	err = tx.GetContext(ctx, &row, s.q("SELECT "+releaseCols+" FROM releases WHERE id = ?"), id)
	if errors.Is(err, sql.ErrNoRows) {
		return release.Release{}, fmt.Errorf("%w: no release %d", release.ErrNotFound, id)
	}
	if err != nil {
		return release.Release{}, fmt.Errorf("release %d: %w", id, err)
	}
	r, err := row.release()
	if err != nil {
		return release.Release{}, err
	}
	var values []string
	if err := tx.SelectContext(ctx, &values, s.q("SELECT value FROM release_files WHERE release_id = ?"), id); err != nil {
		return release.Release{}, fmt.Errorf("release %d: %w", id, err)
	}
	r.Files = make([]release.File, len(values))
	files := make([]*release.File, len(values))
	for i, v := range values {
		if err := json.Unmarshal([]byte(v), &r.Files[i]); err != nil {
			return release.Release{}, fmt.Errorf("release %d: file: %w", id, err)
		}
		files[i] = &r.Files[i]
	}
	if err := s.fillParts(ctx, tx, files); err != nil {
		return release.Release{}, fmt.Errorf("release %d: parts: %w", id, err)
	}
	slices.SortFunc(r.Files, func(a, b release.File) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return r, nil
}
