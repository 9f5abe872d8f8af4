//go:build !linux

package proxy

// idleMeter cannot tell the machine's idle cores here: ScaleProcs tries more
// threads whatever the other programs use.
type idleMeter struct{}

func (m *idleMeter) measure() (float64, bool) { return 0, false }
