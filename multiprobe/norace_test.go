//go:build !race

package multiprobe

const raceEnabled = false
