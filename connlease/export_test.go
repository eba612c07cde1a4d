package connlease

// Plan exposes plan to the tests: the fair share, the slots to yield,
// whether another holder is starved, and whether Acquire holds back with
// mine slots held.
func Plan(size int, self string, hs []Holding, mine int) (share, yields int, starved, holdBack bool) {
	sh := plan(size, self, hs)
	return sh.share, sh.yields, sh.starved, sh.starved && mine >= sh.share
}
