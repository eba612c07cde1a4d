package connlease

// Plan exposes plan to the tests: the fair share, the slots to yield of
// the mine held and not yet yielded, whether another holder is starved,
// and whether Acquire holds back with self's slots in hs held.
func Plan(size int, self string, hs []Holding, mine int) (share, yields int, starved, holdBack bool) {
	sh := plan(size, self, hs, mine)
	held := 0
	for _, h := range hs {
		if h.Holder == self {
			held = h.Held
		}
	}
	return sh.share, sh.yields, sh.starved, sh.holdsBack(held, false)
}
