//go:build race

package memcache

func init() { raceEnabled = true }
