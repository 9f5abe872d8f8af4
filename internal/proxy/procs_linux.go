package proxy

import (
	"bytes"
	"os"
	"strconv"
)

// idleMeter measures the machine's idle cores from /proc/stat.
type idleMeter struct {
	idle, total uint64 // ticks at the last measure
	primed      bool
}

// measure returns the cores the machine left idle since the last measure
// (idle and iowait ticks over all ticks, times the cores; time stolen by a
// hypervisor is not idle). It reports false at the first measure, and where
// /proc/stat cannot be read.
func (m *idleMeter) measure() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, rest, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return 0, false
	}
	var t [8]uint64 // user nice system idle iowait irq softirq steal; guest is in user
	for i := range t {
		if t[i], err = strconv.ParseUint(string(f[i+1]), 10, 64); err != nil {
			return 0, false
		}
	}
	idle, total := t[3]+t[4], uint64(0)
	for _, v := range t {
		total += v
	}
	cores := 0
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if len(line) > 3 && string(line[:3]) == "cpu" && line[3] >= '0' && line[3] <= '9' {
			cores++
		}
	}
	last := *m
	m.idle, m.total, m.primed = idle, total, true
	if !last.primed || idle < last.idle || total <= last.total || cores == 0 {
		return 0, false
	}
	return float64(idle-last.idle) / float64(total-last.total) * float64(cores), true
}
