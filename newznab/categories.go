package newznab

import (
	"slices"
	"strings"

	"github.com/edgeindex/edgeindex/release"
)

// Category is a Newznab category: a parent, whose id is a multiple of
// 1000, with its subcategories, or a subcategory.
type Category struct {
	ID   int
	Name string
	Subs []Category
}

// categories is what caps lists: the Newznab categories
// release.Categorize gives, parents in order with their subcategories.
// An API advertises only what it serves, so the standard ones it never
// gives (such as 2010 Movies > Foreign) are left out.
var categories = fromRelease()

func fromRelease() []Category {
	var out []Category
	for _, id := range release.CategoryIDs() {
		name, _ := release.CategoryName(id)
		if id%1000 == 0 || len(out) == 0 {
			out = append(out, Category{ID: id, Name: name})
			continue
		}
		_, sub, _ := strings.Cut(name, " > ")
		p := &out[len(out)-1]
		p.Subs = append(p.Subs, Category{ID: id, Name: sub})
	}
	return out
}

// Categories returns the Newznab standard categories caps lists, parents
// in order with their subcategories: a copy the caller may change.
func Categories() []Category {
	out := slices.Clone(categories)
	for i := range out {
		out[i].Subs = slices.Clone(out[i].Subs)
	}
	return out
}

// parentOf returns the parent id of category id: id rounded down to a
// thousand.
func parentOf(id int) int { return id / 1000 * 1000 }

// lookup returns the parent of id and, when id is one of its
// subcategories, that subcategory; ok is false for an id of no parent
// in the list.
func lookup(id int) (parent, sub Category, ok bool) {
	for _, p := range categories {
		if p.ID != parentOf(id) {
			continue
		}
		for _, s := range p.Subs {
			if s.ID == id {
				return p, s, true
			}
		}
		return p, Category{}, true
	}
	return Category{}, Category{}, false
}

// CategoryName returns the name clients show for category id: "TV > HD"
// for a subcategory, "TV" for a parent (or an unknown subcategory of
// it), and "Other" for an id of no parent in the list.
func CategoryName(id int) string {
	p, s, ok := lookup(id)
	switch {
	case !ok:
		return "Other"
	case s.ID == 0:
		return p.Name
	}
	return p.Name + " > " + s.Name
}
