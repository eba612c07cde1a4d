package release

import "strings"

// The Newznab categories Categorize gives. The parents are 1000 Console,
// 2000 Movies, 3000 Audio, 4000 PC, 5000 TV, 6000 XXX, 7000 Books and
// 8000 Other; a release gets a subcategory where a rule knows one.
const (
	CatConsole     = 1000
	CatMovieOther  = 2020
	CatMovieSD     = 2030
	CatMovieHD     = 2040
	CatMovieUHD    = 2045
	CatMovieBluRay = 2050
	CatMovie3D     = 2060
	CatAudio       = 3000
	CatMP3         = 3010
	CatAudiobook   = 3030
	CatLossless    = 3040
	CatPC0day      = 4010
	CatPCMac       = 4030
	CatPCGames     = 4050
	CatTV          = 5000
	CatTVSD        = 5030
	CatTVHD        = 5040
	CatTVUHD       = 5045
	CatTVOther     = 5050
	CatTVSport     = 5060
	CatTVAnime     = 5070
	CatTVDocu      = 5080
	CatXXX         = 6000
	CatXXXDVD      = 6010
	CatXXXXviD     = 6030
	CatXXXx264     = 6040
	CatXXXUHD      = 6045
	CatXXXImageSet = 6060
	CatBooks       = 7000
	CatMagazines   = 7010
	CatEbook       = 7020
	CatComics      = 7030
	CatMisc        = 8010
	CatHashed      = 8020
)

var categoryNames = map[int]string{
	CatConsole:     "Console",
	2000:           "Movies",
	CatMovieOther:  "Movies > Other",
	CatMovieSD:     "Movies > SD",
	CatMovieHD:     "Movies > HD",
	CatMovieUHD:    "Movies > UHD",
	CatMovieBluRay: "Movies > BluRay",
	CatMovie3D:     "Movies > 3D",
	CatAudio:       "Audio",
	CatMP3:         "Audio > MP3",
	CatAudiobook:   "Audio > Audiobook",
	CatLossless:    "Audio > Lossless",
	4000:           "PC",
	CatPC0day:      "PC > 0day",
	CatPCMac:       "PC > Mac",
	CatPCGames:     "PC > Games",
	CatTV:          "TV",
	CatTVSD:        "TV > SD",
	CatTVHD:        "TV > HD",
	CatTVUHD:       "TV > UHD",
	CatTVOther:     "TV > Other",
	CatTVSport:     "TV > Sport",
	CatTVAnime:     "TV > Anime",
	CatTVDocu:      "TV > Documentary",
	CatXXX:         "XXX",
	CatXXXDVD:      "XXX > DVD",
	CatXXXXviD:     "XXX > XviD",
	CatXXXx264:     "XXX > x264",
	CatXXXUHD:      "XXX > UHD",
	CatXXXImageSet: "XXX > ImageSet",
	CatBooks:       "Books",
	CatMagazines:   "Books > Magazines",
	CatEbook:       "Books > Ebook",
	CatComics:      "Books > Comics",
	8000:           "Other",
	CatMisc:        "Other > Misc",
	CatHashed:      "Other > Hashed",
}

// CategoryName returns the name of a category Categorize knows ("TV >
// HD"): every one it gives, and their parents. Any other id is false.
func CategoryName(id int) (string, bool) {
	n, ok := categoryNames[id]
	return n, ok
}

// Categorize returns the Newznab category of a release by its name and
// groups. It reads the name's words (as ParseEpisode does) once, notes
// what they say (a resolution, a source, an episode, a year, a file
// format...), and then takes the first rule of categoryRules that
// matches; without one, a rule of groupRules by the groups; without that,
// 8010 Other > Misc. It never panics and takes time linear in the name's
// and groups' length.
//
// Resolutions: 2160p, 4K and UHD are UHD; 720p, 1080p and 1080i (also as
// 1280x720, 1080p60, Bluray1080p) are HD; 480p, 576p, 360p and the SD
// sources (DVDRip, XviD, DivX, PDTV, SDTV, DSR) are SD. A name with a
// source (HDTV, WEB-DL, BluRay...) but no resolution is SD, as Sonarr
// reads it.
//
// Movies are names with a year (1900 to 2099), no episode, and a
// resolution or a video source; full discs (BDMV, BD25, BD50, COMPLETE
// BLURAY, a BluRay ISO) and remuxes are 2050 BluRay whatever their
// resolution, and 3D (3D, SBS, HSBS, HOU) is 2060. A name with video words
// but no year and no episode is no movie (8010, unless a group says).
//
// Not given: the Foreign subcategories (2010, 5020), Console's and the
// rarer PC and XXX subcategories; those releases get the parent or the
// nearest subcategory (a console game is 1000).
func Categorize(name string, groups []string) int {
	f := readName(name, groups)
	for _, r := range categoryRules {
		if c := r.cat(&f); c != 0 {
			return c
		}
	}
	for _, r := range groupRules {
		for _, g := range f.groups {
			if strings.Contains(g, r.part) {
				return r.cat
			}
		}
	}
	return CatMisc
}

// A rule gives a category for a name, or 0 when it does not apply.
type rule struct {
	what string // what it matches, for people
	cat  func(f *facts) int
}

// categoryRules are Categorize's rules, in order: the first that gives a
// category wins.
var categoryRules = []rule{
	{"a hashed or obfuscated name (no readable word at all)", func(f *facts) int {
		return pick(f.hashed, CatHashed)
	}},
	{"installer packages: .msi, .msix, .msixbundle, .appxbundle", func(f *facts) int {
		return pick(f.has("msi", "msix", "msixbundle", "appxbundle"), CatPC0day)
	}},
	{"XXX: a group of erotica, xxx or porn, or the word XXX or a VR headset's (GearVR, VR180, Oculus)", func(f *facts) int {
		if !f.groupHas("erotica", "xxx", "porn") && !f.has("xxx", "gearvr", "vr180", "vr360", "oculus") {
			return 0
		}
		switch {
		case f.groupHas("pictures", "images") || f.has("imageset", "imgset"):
			return CatXXXImageSet
		case f.res == resUHD:
			return CatXXXUHD
		case f.res == resHD || f.has("x264", "h264", "x265", "h265", "hevc"):
			return CatXXXx264
		case f.has("dvd", "dvdrip", "dvd5", "dvd9"):
			return CatXXXDVD
		case f.has("xvid", "divx"):
			return CatXXXXviD
		}
		return CatXXX
	}},
	{"console games: PS3/4/5, PSP, PSVita, Xbox, Wii, NSW, NSP, XCI, 3DS, NDS", func(f *facts) int {
		return pick(f.ep == nil && !f.video && f.has("ps3", "ps4", "ps5", "psp", "psvita", "xbox", "xbox360",
			"xboxone", "x360", "wii", "wiiu", "nsw", "nsp", "xci", "3ds", "nds"), CatConsole)
	}},
	{"software: x64, x86, Win64, Multilingual, Portable, Keygen, macOS; no video", func(f *facts) int {
		if f.ep != nil || f.video {
			return 0
		}
		if f.has("macos", "osx") {
			return CatPCMac
		}
		return pick(f.has("x64", "x86", "win32", "win64", "multilingual", "portable", "keygen", "installer", "setup"), CatPC0day)
	}},
	{"audiobooks: Audiobook, ABook, M4B, Unabridged; no video", func(f *facts) int {
		return pick(!f.video && f.has("audiobook", "audiobooks", "abook", "m4b", "unabridged", "hoerbuch"), CatAudiobook)
	}},
	{"lossless audio: FLAC, ALAC, Lossless, 24bit; no video, no episode", func(f *facts) int {
		return pick(!f.video && f.ep == nil && f.has("flac", "alac", "lossless", "24bit"), CatLossless)
	}},
	{"MP3: MP3, 320kbps, VBR, V0; no video, no episode", func(f *facts) int {
		return pick(!f.video && f.ep == nil && f.has("mp3", "320kbps", "256kbps", "192kbps", "vbr", "v0"), CatMP3)
	}},
	{"comics: CBR, CBZ, Comic(s); no video, no episode", func(f *facts) int {
		return pick(!f.video && f.ep == nil && f.has("cbr", "cbz", "comic", "comics"), CatComics)
	}},
	{"magazines: Magazine(s), or Issue and a number; no video", func(f *facts) int {
		return pick(!f.video && (f.has("magazine", "magazines") || f.issue), CatMagazines)
	}},
	{"ebooks: EPUB, MOBI, AZW3, PDF, eBook; no video", func(f *facts) int {
		return pick(!f.video && f.has("epub", "mobi", "azw", "azw3", "pdf", "ebook", "ebooks"), CatEbook)
	}},
	{"sport on TV: a league or event (NBA, NFL, UFC, F1, Olympics...) and a video word", func(f *facts) int {
		return pick((f.video || f.ep != nil) && f.has("nba", "nfl", "nhl", "mlb", "mls", "epl", "ufc", "wwe", "f1", "formula1",
			"motogp", "nascar", "uefa", "olympic", "olympics", "ncaa", "ncaaf", "bundesliga", "laliga", "wrestling"), CatTVSport)
	}},
	{"anime: an anime group, or a fansub's [Group] Title - 08 or a [1A2B3C4D] checksum", func(f *facts) int {
		return pick(f.groupHas("anime") || f.fansub, CatTVAnime)
	}},
	{"TV: an episode, season pack or daily date (ParseEpisode), by resolution", func(f *facts) int {
		if f.ep == nil {
			return 0
		}
		switch {
		case f.has("documentary", "docu", "natgeo"):
			return CatTVDocu
		case f.res == resUHD:
			return CatTVUHD
		case f.res == resHD:
			return CatTVHD
		case f.res == resSD || f.video:
			return CatTVSD
		}
		return CatTVOther
	}},
	{"PC games: a cracker's or shop's group (-CODEX, -RUNE, -GOG...), SteamRip, PC and Game", func(f *facts) int {
		return pick(!f.video && (gameGroups[f.group] || f.has("steamrip", "pcgame") || f.has("pc") && f.has("game", "games")), CatPCGames)
	}},
	{"movies: a year and a resolution or video source, by resolution", func(f *facts) int {
		if !f.year || !f.video {
			return 0
		}
		switch {
		case f.has("3d", "sbs", "hsbs", "fsbs", "hou", "htab"):
			return CatMovie3D
		case f.disc:
			return CatMovieBluRay
		case f.res == resUHD:
			return CatMovieUHD
		case f.res == resHD:
			return CatMovieHD
		}
		return CatMovieSD
	}},
}

// groupRules categorize a readable name no rule above placed, by a part
// of one of its groups, in order.
var groupRules = []struct {
	part string
	cat  int
}{
	{"anime", CatTVAnime},
	{"sounds.flac", CatLossless},
	{"lossless", CatLossless},
	{"audiobook", CatAudiobook},
	{"mp3", CatMP3},
	{"sounds", CatAudio},
	{"comics", CatComics},
	{"e-book", CatEbook},
	{"ebook", CatEbook},
	{"hdtv", CatTV},
	{"teevee", CatTV},
	{"multimedia.tv", CatTV},
	{"tvseries", CatTV},
	{"movies", 2000},
	{"dvd", 2000},
	{"games.pc", CatPCGames},
	{"games.", CatConsole},
	{"nintendo", CatConsole},
	{"sony.psp", CatConsole},
	{"xbox", CatConsole},
	{"pc.games", CatPCGames},
	{"games", CatPCGames},
	{"warez", CatPC0day},
	{"cd.image", CatPC0day},
}

// gameGroups are the groups of PC game releases, by the last "-" part of
// a name, in lower case.
var gameGroups = map[string]bool{}

func init() {
	for _, g := range strings.Fields(`codex skidrow plaza rune tenoke empress flt fairlight reloaded gog dodi fitgirl
		elamigos darksiders tinyiso hoodlum prophet cpy razor1911 doge simplex kaos goldberg steampunks p2pgames`) {
		gameGroups[g] = true
	}
}

func pick(ok bool, cat int) int {
	if ok {
		return cat
	}
	return 0
}

// Resolutions.
const (
	resNone = iota
	resSD
	resHD
	resUHD
)

// facts is what Categorize reads off a name once.
type facts struct {
	words  []string
	groups []string // in lower case
	group  string   // the name's last "-" part, lower case: its release group
	ep     *Episode
	res    int
	video  bool // a resolution or a video source, codec or container
	year   bool // a word of 1900 to 2099
	disc   bool // a full disc or a remux
	iso    bool // the word ISO
	issue  bool // "issue" and a number
	fansub bool // [Group] Title - 08, or a [1A2B3C4D] checksum
	hashed bool
}

// has reports whether one of ws is a word of the name.
func (f *facts) has(ws ...string) bool {
	for _, w := range f.words {
		for _, x := range ws {
			if w == x {
				return true
			}
		}
	}
	return false
}

// groupHas reports whether a part of a group is one of parts.
func (f *facts) groupHas(parts ...string) bool {
	for _, g := range f.groups {
		for _, p := range parts {
			if strings.Contains(g, p) {
				return true
			}
		}
	}
	return false
}

// maxGroups bounds the groups Categorize reads (a release crossposted to
// more is rare; the first ones decide).
const maxGroups = 16

func readName(name string, groups []string) facts {
	if len(name) > 1024 {
		name = name[:1024]
	}
	f := facts{words: splitWords(name, maxWords), ep: ParseEpisode(name), hashed: hashedName(name)}
	for i, g := range groups {
		if i == maxGroups {
			break
		}
		if len(g) > 256 {
			g = g[:256]
		}
		f.groups = append(f.groups, strings.ToLower(g))
	}
	if i := strings.LastIndexByte(name, '-'); i >= 0 && i+1 < len(name) {
		f.group = strings.ToLower(strings.TrimSpace(name[i+1:]))
	}
	for i, w := range f.words {
		if r := resolution(w); r > f.res {
			f.res = r
		}
		if videoWords[w] {
			f.video = true
		}
		if len(w) == 4 && digits(w) && (w[:2] == "19" || w[:2] == "20") {
			f.year = true
		}
		switch w {
		case "bdmv", "bd25", "bd50", "bd66", "bd100", "remux", "bdremux", "uhdremux", "bdiso":
			f.disc = true
		case "iso":
			f.iso = true
		case "complete", "full":
			if i+1 < len(f.words) && (f.words[i+1] == "bluray" || f.words[i+1] == "uhd" && i+2 < len(f.words) && f.words[i+2] == "bluray") {
				f.disc = true
			}
		case "issue":
			if i+1 < len(f.words) && digits(f.words[i+1]) {
				f.issue = true
			}
		}
	}
	if f.iso && f.has("bluray") {
		f.disc = true
	}
	if f.res != resNone || f.disc {
		f.video = true
	}
	f.fansub = fansub(name)
	return f
}

// videoWords are the sources, codecs and containers of video. WEB alone
// is not one: music is released as WEB too.
var videoWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`bluray blu bdrip brrip bd webdl webrip webhd hdtv pdtv sdtv dsr hdrip dvdrip dvd dvdscr
		dvd5 dvd9 dvdr xvid divx x264 x265 h264 h265 hevc avc remux bdmv mkv avi mp4 m2ts hdr hdr10 dovi tvrip hdcam cam telesync`) {
		videoWords[w] = true
	}
}

// resolution returns the resolution a word names.
func resolution(w string) int {
	switch w {
	case "4k", "uhd", "2160p", "4320p":
		return resUHD
	case "hd", "fhd", "hd1080", "hd720":
		return resHD
	case "sd", "sdtv", "pdtv", "dsr", "dvdrip", "xvid", "divx", "tvrip":
		return resSD
	}
	if i := strings.IndexByte(w, 'x'); i > 0 && digits(w[:i]) && digits(w[i+1:]) { // 1280x720
		switch w[i+1:] {
		case "2160":
			return resUHD
		case "720", "1080":
			return resHD
		case "480", "576", "360":
			return resSD
		}
		return resNone
	}
	// 1080p, 1080p60, 720pEN60fps, Bluray1080p: the height and p or i,
	// after a non-digit or at the start.
	for _, h := range [...]struct {
		s   string
		res int
	}{{"2160p", resUHD}, {"1080p", resHD}, {"1080i", resHD}, {"720p", resHD}, {"576p", resSD}, {"576i", resSD}, {"480p", resSD}, {"480i", resSD}, {"360p", resSD}} {
		if i := strings.Index(w, h.s); i >= 0 && (i == 0 || !isDigit(w[i-1])) {
			return h.res
		}
	}
	return resNone
}

// fansub reports a fansub's name: it starts with a [Group] tag, and has
// a bracketed 8-digit hex checksum ([26BDA3C9]) or " - " (or "_-_") and
// an episode number or word (" - 08", " - S01E07").
func fansub(name string) bool {
	if len(name) < 3 || name[0] != '[' {
		return false
	}
	end := strings.IndexByte(name, ']')
	if end < 2 {
		return false
	}
	rest := name[end+1:]
	for i := 0; i+10 <= len(rest); i++ {
		if (rest[i] == '[' || rest[i] == '(') && (rest[i+9] == ']' || rest[i+9] == ')') && hexWord(rest[i+1:i+9]) {
			return true
		}
	}
	for i := 0; i+3 < len(rest); i++ {
		if !fansubSpace(rest[i]) || rest[i+1] != '-' || !fansubSpace(rest[i+2]) {
			continue
		}
		j := i + 3
		k := j
		for k < len(rest) && isAlnum(rest[k]) {
			k++
		}
		w := strings.ToLower(rest[j:k])
		if _, ok := smallNumber(w, 4); ok {
			return true
		}
		if _, _, ok := episodeWord(w); ok {
			return true
		}
	}
	return false
}

func fansubSpace(c byte) bool { return c == ' ' || c == '_' || c == '.' }

// hexWord reports whether w is all hex digits with at least one digit.
func hexWord(w string) bool {
	digit := false
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case isDigit(c):
			digit = true
		case c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		default:
			return false
		}
	}
	return len(w) > 0 && digit
}

// hashedName reports a name that has no readable word: the name (without
// quotes and white space around it) is one obfuscated word (see
// obfuscated), or a UUID or hex digest with dashes, or 3 or more words
// that each switch between letters and digits at least twice
// ("aB3c.D4eF.5gH6i").
func hashedName(name string) bool {
	s := strings.Trim(name, " \t\"'[]()")
	if strings.IndexByte(s, '-') > 0 && len(s) >= 16 {
		if hexWord(strings.ReplaceAll(s, "-", "")) {
			return true
		}
	}
	if obfuscated(s) {
		return true
	}
	words := splitWords(s, maxWords)
	if len(words) < 3 {
		return false
	}
	for _, w := range words {
		if switches(w) < 2 {
			return false
		}
	}
	return true
}

// switches counts the changes between letters and digits in a word.
func switches(w string) int {
	n := 0
	for i := 1; i < len(w); i++ {
		if isDigit(w[i]) != isDigit(w[i-1]) {
			n++
		}
	}
	return n
}

// obfuscated reports whether w is one word that looks random rather than
// named: only ASCII letters and digits (a base64 "=" padding aside), at
// least 6 of them, and one of
//
//   - hex digits (of one case) with a digit, at least 16: an MD5 or SHA;
//   - at least 16 with a digit: no name has a word that long with digits;
//   - at least 2 letters and 2 digits that alternate at least 4 times
//     ("x7k2q9", "xK9mR2pL4q"), and no episode (S01E02E03 is not random);
//   - letters only, at least 16, with at most one vowel in 8 letters.
//
// A name with a separator (dot, dash, space, underscore) is never one
// word, so "My.Show.S01E01" and "x264-GRP" are not obfuscated.
func obfuscated(w string) bool {
	w = strings.TrimRight(w, "=")
	if len(w) < 6 || len(w) > 256 {
		return false
	}
	letters, nums, vowels, changes := 0, 0, 0, 0
	prevDigit := false
	for i := 0; i < len(w); i++ {
		c := w[i]
		d := isDigit(c)
		switch {
		case d:
			nums++
		case isLetter(c):
			letters++
			if strings.IndexByte("aeiouAEIOU", c) >= 0 {
				vowels++
			}
		default:
			return false
		}
		if i > 0 && d != prevDigit {
			changes++
		}
		prevDigit = d
	}
	switch {
	case len(w) >= 16 && hexWord(w) && (w == strings.ToLower(w) || w == strings.ToUpper(w)):
		return true
	case len(w) >= 16 && nums > 0:
		return true
	case letters >= 2 && nums >= 2 && changes >= 4:
		_, _, ep := episodeWord(strings.ToLower(w))
		return !ep
	case nums == 0 && letters >= 16:
		return vowels*8 <= letters
	}
	return false
}
