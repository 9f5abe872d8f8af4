//go:build race

package multiprobe

// raceEnabled is set under the race detector, which slows the statistical tests
// (they start no goroutines) some tenfold; they then run smaller.
const raceEnabled = true
