//go:build !race

package maglev

const raceEnabled = false
