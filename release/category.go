package release

// Categorize returns the Newznab category of a release by its name and
// groups. (A stub: every release is 8010 until the rules land.)
func Categorize(name string, groups []string) int { return 8010 }

// ParseEpisode returns the TV episode a release name gives, or nil. (A
// stub until the rules land.)
func ParseEpisode(name string) *Episode { return nil }
