package main

import (
	"iter"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// newProgress returns a function that reports progress towards total on a bar
// on standard error, when standard error is a terminal and total is at least
// least; otherwise a function that does nothing. The bar clears itself when
// done.
func newProgress(env *Env, total, least int, what string) func(done int) {
	f, ok := env.Stderr.(*os.File)
	if !ok || total < least || !term.IsTerminal(int(f.Fd())) {
		return func(int) {}
	}
	bar := progressbar.NewOptions64(int64(total),
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
	)
	return func(done int) {
		bar.Set64(int64(done))
		if done >= total {
			bar.Finish()
		}
	}
}

// progressKeys reports progress through keys, n in all, on a bar when there are
// a million or more (see newProgress). The bar appears only once the keys are
// used.
func progressKeys(env *Env, keys iter.Seq[[]byte], n int, what string) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		report := newProgress(env, n, 1_000_000, what)
		i := 0
		for k := range keys {
			if !yield(k) {
				return
			}
			if i++; i&0xffff == 0 || i == n {
				report(i)
			}
		}
	}
}
