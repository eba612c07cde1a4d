package release

import (
	"slices"
	"time"
)

// Stored is a file a store already holds, with the release it is in.
type Stored struct {
	Release int64
	File    File
}

// Placed is a file for a store to write.
type Placed struct {
	// Release is the id of the file's release; a negative one is the ID
	// of a release in Changes.New, which the store creates first.
	Release int64
	File    File
	New     bool // not stored before: insert it; else replace it
}

// Changes is what Assign decided for one page.
type Changes struct {
	New     []Release // releases to create, in order; their IDs are -1, -2...
	Changed []Release // stored releases whose totals, dates or groups changed
	Files   []Placed
}

// Lookup is what a store reads before Assign, in the same transaction:
// the stored files of Keys, the releases they are in, and the stored
// releases whose key is in Sets and whose [Posted−window, Last+window]
// meets [From, To].
type Lookup struct {
	Keys     []string
	Sets     []string
	From, To time.Time
}

// set returns the Set of file i.
func (u *Update) set(i int) Set {
	if i < len(u.Sets) {
		return u.Sets[i]
	}
	return ParseSet(u.Files[i].Subject)
}

// Needs returns what a store must read, in PutReleases's transaction, for
// Assign to place u's files.
func Needs(u Update) Lookup {
	var l Lookup
	for i, f := range u.Files {
		l.Keys = append(l.Keys, f.Key)
		l.Sets = append(l.Sets, SetKey(f.Poster, u.set(i).Key))
		if i == 0 || f.Date.Before(l.From) {
			l.From = f.Date
		}
		if i == 0 || f.Date.After(l.To) {
			l.To = f.Date
		}
	}
	slices.Sort(l.Sets)
	l.Sets = slices.Compact(l.Sets)
	l.From, l.To = l.From.Add(-u.Window), l.To.Add(u.Window)
	return l
}

// Assign places the files of one page of the feed (u.Files, one per key)
// into releases, as NNTmux makes releases of collections:
//
//   - a file already stored is merged with its stored self (File.Merge) and
//     stays in its release;
//   - a new file joins the release with the same key (its poster and
//     ParseSet's Key: SetKey) whose [Posted−Window, Last+Window] holds its
//     date, the nearest when several do (the oldest on a tie); without one
//     it starts a new release named after its set.
//
// stored holds the page's stored files by key; releases holds the stored
// releases Lookup names (and may hold more). A release's totals, dates and
// groups follow its files; updated is set to now on every release that
// changes, and its Category and Episode are set again (Categorize and
// ParseEpisode of its Name and Groups). Assign changes none of its
// arguments.
func Assign(u Update, stored map[string]Stored, releases []Release, now time.Time) Changes {
	as := newAssigner(releases, now)
	for i, f := range u.Files {
		if old, ok := stored[f.Key]; ok {
			as.merge(old, f)
			continue
		}
		as.place(f, u.set(i), u.Window)
	}
	return as.changes()
}

// assigner is the state of one Assign: the releases by id and by set
// key, as copies it may change.
type assigner struct {
	byID    map[int64]*Release
	bySet   map[string][]*Release
	now     time.Time
	next    int64   // the id of the next new release: -1, -2...
	changed []int64 // the stored releases changed, in order
	ch      Changes
}

func newAssigner(releases []Release, now time.Time) *assigner {
	as := &assigner{
		byID:  make(map[int64]*Release, len(releases)),
		bySet: make(map[string][]*Release, len(releases)),
		now:   now,
		next:  -1,
	}
	for i := range releases {
		r := releases[i] // a copy
		r.Groups = slices.Clone(r.Groups)
		r.Files = nil
		as.byID[r.ID] = &r
		as.bySet[r.Key] = append(as.bySet[r.Key], &r)
	}
	return as
}

// touch records that the stored release r changed.
func (as *assigner) touch(r *Release) {
	r.Updated = as.now
	if r.ID > 0 && !slices.Contains(as.changed, r.ID) {
		as.changed = append(as.changed, r.ID)
	}
}

// merge merges f into the stored file old, in old's release.
func (as *assigner) merge(old Stored, f File) {
	r := as.byID[old.Release]
	if r == nil {
		// The store did not read it: a bug in the store. Placing the
		// file elsewhere would lose its totals; keep it where it is.
		r = &Release{ID: old.Release}
		as.byID[r.ID] = r
	}
	merged := old.File.Merge(f)
	r.add(&old.File, -1)
	r.add(&merged, +1)
	r.join(&merged)
	as.touch(r)
	as.ch.Files = append(as.ch.Files, Placed{Release: r.ID, File: merged})
}

// place puts the new file f, of the set set, in the nearest release of
// its set key within window, or in a new one.
func (as *assigner) place(f File, set Set, window time.Duration) {
	key := SetKey(f.Poster, set.Key)
	r := nearest(as.bySet[key], f.Date, window)
	if r == nil {
		r = &Release{ID: as.next, Key: key, Name: set.Name, Poster: f.Poster, Posted: f.Date, Last: f.Date}
		as.next--
		as.byID[r.ID] = r
		as.bySet[key] = append(as.bySet[key], r)
	}
	r.add(&f, +1)
	r.join(&f)
	r.FilesExpected = max(r.FilesExpected, set.Files)
	as.touch(r)
	as.ch.Files = append(as.ch.Files, Placed{Release: r.ID, File: f, New: true})
}

// changes settles and classifies the new and changed releases.
func (as *assigner) changes() Changes {
	for id := int64(-1); id > as.next; id-- {
		r := as.byID[id]
		r.settle()
		r.classify()
		as.ch.New = append(as.ch.New, *r)
	}
	for _, id := range as.changed {
		r := as.byID[id]
		r.settle()
		r.classify()
		as.ch.Changed = append(as.ch.Changed, *r)
	}
	return as.ch
}

// classify sets the release's category and episode from its name and
// groups; a changed release is classified again, as its groups can grow.
func (r *Release) classify() {
	r.Category = Categorize(r.Name, r.Groups)
	r.Episode = ParseEpisode(r.Name)
}

// join widens the release's dates and groups to the file's.
func (r *Release) join(f *File) {
	if !f.Date.IsZero() {
		if r.Posted.IsZero() || f.Date.Before(r.Posted) {
			r.Posted = f.Date
		}
		if f.Date.After(r.Last) {
			r.Last = f.Date
		}
	}
	for _, g := range f.Groups {
		if !slices.Contains(r.Groups, g) {
			r.Groups = unionSorted(r.Groups, f.Groups)
			break
		}
	}
}

// nearest returns the release whose [Posted−window, Last+window] holds t
// and is nearest to it (the oldest on a tie), or nil.
func nearest(rs []*Release, t time.Time, window time.Duration) *Release {
	var best *Release
	var bestD time.Duration
	for _, r := range rs {
		var d time.Duration
		switch {
		case t.Before(r.Posted):
			d = r.Posted.Sub(t)
		case t.After(r.Last):
			d = t.Sub(r.Last)
		}
		if d > window {
			continue
		}
		if best == nil || d < bestD || (d == bestD && less(r.ID, best.ID)) {
			best, bestD = r, d
		}
	}
	return best
}

// less orders release ids by age: stored ones (positive) by id, then new
// ones (-1, -2...) in the order they were made.
func less(a, b int64) bool {
	switch {
	case a > 0 && b > 0:
		return a < b
	case a > 0:
		return true
	case b > 0:
		return false
	}
	return a > b
}
