// Package sourcetest is the conformance suite for sources.ChunkSource, in
// the style of River's riverdrivertest: every source (the synthetic
// generator, the NNTP client against its test server, a user's own) runs the
// same cases.
//
//	func TestSynthetic(t *testing.T) {
//		sourcetest.Run(t, func(t *testing.T) sourcetest.Harness {
//			src, err := sources.NewSynthetic(sources.SyntheticConfig{Groups: []string{"alt.test"}})
//			require.NoError(t, err)
//			return sourcetest.Harness{Source: src, Group: "alt.test", Low: 1, High: 10_000_000,
//				Present: func(int64) bool { return true }, Span: lease.Span{From: 1, To: 2000}}
//		})
//	}
//
// The harness says which group the source carries, its watermarks, and
// which article numbers exist (Present); optional spans turn on the cases
// for an empty span and for numbers above 2^31.
package sourcetest
