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
	byID := make(map[int64]*Release, len(releases))
	bySet := make(map[string][]*Release, len(releases))
	for i := range releases {
		r := releases[i] // a copy
		r.Groups = slices.Clone(r.Groups)
		r.Files = nil
		byID[r.ID] = &r
		bySet[r.Key] = append(bySet[r.Key], &r)
	}
	var ch Changes
	var changed []int64
	touch := func(r *Release) {
		if r.ID > 0 && !slices.Contains(changed, r.ID) {
			changed = append(changed, r.ID)
		}
	}
	next := int64(-1)
	for i, f := range u.Files {
		if old, ok := stored[f.Key]; ok {
			r := byID[old.Release]
			if r == nil {
				// The store did not read it: a bug in the store. Placing the
				// file elsewhere would lose its totals; keep it where it is.
				r = &Release{ID: old.Release}
				byID[r.ID] = r
			}
			merged := old.File.Merge(f)
			r.add(&old.File, -1)
			r.add(&merged, +1)
			r.join(&merged)
			r.Updated = now
			touch(r)
			ch.Files = append(ch.Files, Placed{Release: r.ID, File: merged})
			continue
		}
		set := u.set(i)
		key := SetKey(f.Poster, set.Key)
		r := nearest(bySet[key], f.Date, u.Window)
		if r == nil {
			r = &Release{ID: next, Key: key, Name: set.Name, Poster: f.Poster, Posted: f.Date, Last: f.Date}
			next--
			byID[r.ID] = r
			bySet[key] = append(bySet[key], r)
		}
		r.add(&f, +1)
		r.join(&f)
		r.FilesExpected = max(r.FilesExpected, set.Files)
		r.Updated = now
		touch(r)
		ch.Files = append(ch.Files, Placed{Release: r.ID, File: f, New: true})
	}
	for id := int64(-1); id > next; id-- {
		r := byID[id]
		r.settle()
		r.classify()
		ch.New = append(ch.New, *r)
	}
	for _, id := range changed {
		r := byID[id]
		r.settle()
		r.classify()
		ch.Changed = append(ch.Changed, *r)
	}
	return ch
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
