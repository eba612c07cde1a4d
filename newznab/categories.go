package newznab

import "slices"

// Category is a Newznab category: a parent, whose id is a multiple of
// 1000, with its subcategories, or a subcategory.
type Category struct {
	ID   int
	Name string
	Subs []Category
}

// categories is the Newznab standard list as today's clients number it
// (an old version of the spec swapped 7000 and 8000). release.Categorize
// assigns ids from the same list.
var categories = []Category{
	{1000, "Console", nil},
	{2000, "Movies", []Category{
		{2010, "Foreign", nil}, {2020, "Other", nil}, {2030, "SD", nil}, {2040, "HD", nil},
		{2045, "UHD", nil}, {2050, "BluRay", nil}, {2060, "3D", nil},
	}},
	{3000, "Audio", []Category{
		{3010, "MP3", nil}, {3020, "Video", nil}, {3030, "Audiobook", nil}, {3040, "Lossless", nil},
	}},
	{4000, "PC", []Category{
		{4010, "0day", nil}, {4050, "Games", nil},
	}},
	{5000, "TV", []Category{
		{5020, "Foreign", nil}, {5030, "SD", nil}, {5040, "HD", nil}, {5045, "UHD", nil},
		{5050, "Other", nil}, {5060, "Sport", nil}, {5070, "Anime", nil}, {5080, "Documentary", nil},
	}},
	{6000, "XXX", []Category{
		{6010, "DVD", nil}, {6040, "x264", nil},
	}},
	{7000, "Books", []Category{
		{7010, "Magazines", nil}, {7020, "Ebook", nil}, {7030, "Comics", nil},
	}},
	{8000, "Other", []Category{
		{8010, "Misc", nil}, {8020, "Hashed", nil},
	}},
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
