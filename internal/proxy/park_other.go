//go:build !linux

package proxy

// parker parks idle clients on Linux only (park_linux.go); elsewhere an idle
// client waits in a goroutine of its own.
type parker struct{}

var idleClients parker

func (*parker) park(*client) bool { return false }
func (*parker) wakePool(*pool)    {}
func (*parker) parkedCount() int  { return 0 }
