//go:build race

package bigbuf

func init() { raceEnabled = true }
