package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/release"
)

// PutReleases implements release.Store: in one transaction it checks the
// consumer's cursor, reads what release.Needs names, lets release.Assign
// place the page's files, writes releases, groups and files (multi-row
// inserts), and moves the cursor. On PostgreSQL it first takes a
// transaction-level advisory lock, so release writers commit one at a time
// and release ids commit in order: a reader paging by id skips none.
func (s *Store) PutReleases(ctx context.Context, u release.Update) (release.Applied, error) {
	if err := checkUpdate(u); err != nil {
		return release.Applied{}, err
	}
	var applied release.Applied
	now := s.nowMicros()
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		if err := s.lockCursor(ctx, tx, u, now); err != nil {
			return err
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

// checkUpdate checks what PutReleases can without the database.
func checkUpdate(u release.Update) error {
	if u.Consumer == "" || u.Window < 0 || u.Items < len(u.Files) {
		return edgeindex.Invalidf("releases: an update needs a consumer, a window of 0 or more, and items for its %d files", len(u.Files))
	}
	if _, _, err := parseCursor(u.Next); err != nil || u.Next == "" {
		return edgeindex.Invalidf("releases: next %q is no feed cursor", u.Next)
	}
	for i, f := range u.Files {
		if f.Key == "" || f.Date.IsZero() {
			return edgeindex.Invalidf("releases: file %d has no key or no date", i)
		}
	}
	return nil
}

// lockCursor takes, in PutReleases' transaction, the release writers'
// advisory lock (on PostgreSQL) and the lock of u's consumer's cursor,
// which it creates at the start of the feed if there is none, and checks
// that the cursor is where u's page was read from (else
// release.ErrCursorMoved).
func (s *Store) lockCursor(ctx context.Context, tx *sqlx.Tx, u release.Update, now int64) error {
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
	return nil
}

// releaseFiles reads the stored files of keys, with their parts.
func (s *Store) releaseFiles(ctx context.Context, tx *sqlx.Tx, keys []string) (map[string]release.Stored, error) {
	var found []release.Stored
	for part := range slices.Chunk(keys, inChunk) {
		rows, err := tx.QueryContext(ctx, s.bind("SELECT key, release_id, value FROM release_files WHERE key IN ("+placeholders(len(part))+")"), anys(part)...)
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
		if err := scan("SELECT "+releaseCols+" FROM releases WHERE id IN ("+placeholders(len(part))+")", anys(part)); err != nil {
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

// releasesPerStatement bounds the releases one statement writes: 20
// parameters a row, well under both dialects' limits.
const releasesPerStatement = 250

// writeReleases creates the new releases and updates the changed ones,
// with their groups, in multi-row statements (an upsert updates the
// changed ones, in both dialects). It returns the id of each new release
// by its placeholder id.
func (s *Store) writeReleases(ctx context.Context, tx *sqlx.Tx, ch release.Changes) (map[int64]int64, error) {
	ids, err := s.insertReleases(ctx, tx, ch.New)
	if err != nil {
		return nil, err
	}
	if err := s.updateReleases(ctx, tx, ch.Changed); err != nil {
		return nil, err
	}
	if err := s.writeReleaseGroups(ctx, tx, releaseGroups(ch, ids)); err != nil {
		return nil, err
	}
	return ids, nil
}

// insertReleases creates the new releases and returns the id of each by
// its placeholder id.
func (s *Store) insertReleases(ctx context.Context, tx *sqlx.Tx, added []release.Release) (map[int64]int64, error) {
	ids := make(map[int64]int64, len(added))
	// New releases of one page differ in key or in posting date by more
	// than the window, so (key, posted) names each one in RETURNING.
	type newKey struct {
		key    string
		posted int64
	}
	temp := make(map[newKey]int64, len(added))
	for _, r := range added {
		temp[newKey{r.Key, r.Posted.UnixMicro()}] = r.ID
	}
	if len(temp) != len(added) {
		return nil, fmt.Errorf("two new releases with one key and one date")
	}
	for part := range slices.Chunk(added, releasesPerStatement) {
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
	for _, r := range added {
		if ids[r.ID] == 0 {
			return nil, fmt.Errorf("new release %q: no id returned", r.Name)
		}
	}
	return ids, nil
}

// updateReleases writes the changed releases with multi-row upserts.
func (s *Store) updateReleases(ctx context.Context, tx *sqlx.Tx, changed []release.Release) error {
	for part := range slices.Chunk(changed, releasesPerStatement) {
		args := make([]any, 0, (releaseWriteN+1)*len(part))
		for _, r := range part {
			args = append(args, r.ID)
			var err error
			if args, err = releaseArgs(args, r); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, s.bind("INSERT INTO releases (id, "+releaseWriteCols+") VALUES "+rowsOf(len(part), releaseWriteN+1)+
			` ON CONFLICT (id) DO UPDATE SET group_names = excluded.group_names, posted_us = excluded.posted_us,
			last_us = excluded.last_us, files_seen = excluded.files_seen, files_complete = excluded.files_complete,
			files_expected = excluded.files_expected, parts_seen = excluded.parts_seen, parts_expected = excluded.parts_expected,
			bytes = excluded.bytes, complete = excluded.complete, updated_us = excluded.updated_us,
			name = CASE WHEN releases.renamed THEN releases.name ELSE excluded.name END,
			category = CASE WHEN releases.renamed THEN releases.category ELSE excluded.category END,
			season = CASE WHEN releases.renamed THEN releases.season ELSE excluded.season END,
			episode = CASE WHEN releases.renamed THEN releases.episode ELSE excluded.episode END,
			episode_daily = CASE WHEN releases.renamed THEN releases.episode_daily ELSE excluded.episode_daily END,
			search_words = CASE WHEN releases.renamed THEN releases.search_words ELSE excluded.search_words END,
			pp_state = CASE WHEN releases.files_seen <> excluded.files_seen THEN 0 ELSE releases.pp_state END,
			pp_attempts = CASE WHEN releases.files_seen <> excluded.files_seen THEN 0 ELSE releases.pp_attempts END,
			pp_next_us = CASE WHEN releases.files_seen <> excluded.files_seen THEN 0 ELSE releases.pp_next_us END`), args...); err != nil {
			return err
		}
	}
	return nil
}

// releaseGroups returns the group_name, release_id pairs of the new
// releases (ids: their ids by placeholder id) and the changed ones.
func releaseGroups(ch release.Changes, ids map[int64]int64) []any {
	var pairs []any
	for _, r := range ch.New {
		for _, g := range r.Groups {
			pairs = append(pairs, g, ids[r.ID])
		}
	}
	for _, r := range ch.Changed {
		for _, g := range r.Groups {
			pairs = append(pairs, g, r.ID)
		}
	}
	return pairs
}

// writeReleaseGroups writes the group_name, release_id pairs a release's
// groups are listed by, those not written before.
func (s *Store) writeReleaseGroups(ctx context.Context, tx *sqlx.Tx, pairs []any) error {
	for part := range slices.Chunk(pairs, 2*inChunk) {
		if _, err := tx.ExecContext(ctx, s.bind("INSERT INTO release_groups (group_name, release_id) VALUES "+rowsOf(len(part)/2, 2)+
			" ON CONFLICT DO NOTHING"), part...); err != nil {
			return err
		}
	}
	return nil
}

// storedFile is a row's value in release_files: the file, and how many
// parts it has, which its Parts do not say when its items hold them.
type storedFile struct {
	release.File
	Seen int `json:"seen,omitempty"`
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
		f := storedFile{File: p.File, Seen: len(p.File.Parts)}
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
