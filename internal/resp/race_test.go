//go:build race

package resp

func init() { raceEnabled = true }
