package testprog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// dieWithParent has the kernel kill cmd's process if the test binary dies
// without stopping it (a panic, go test's -timeout), so that no server
// outlives its test. The kernel sends the signal when the thread that started
// the process ends; Go ends a thread only when a goroutine locked to it
// returns, which the callers of Start do not do.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// waitStopped waits until every thread of the process pid is stopped by a
// signal (stopped true), or none is. kill returns before the threads of a
// process have stopped: on a busy machine a multi-threaded server such as
// memcached can still answer a request sent right after SIGSTOP.
func waitStopped(pid int, stopped bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		state, err := threadStates(pid)
		if err != nil {
			return err
		}
		if !bytes.ContainsFunc(state, func(r rune) bool { return (r == 'T') != stopped }) {
			return nil
		}
		if bytes.ContainsAny(state, "ZX") {
			return errors.New("exited")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("its threads are in states %q after %v", state, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// threadStates returns the state letter of each thread of the process pid,
// from /proc: R running, S sleeping, T stopped, Z zombie, ....
func threadStates(pid int) ([]byte, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var states []byte
	for _, task := range tasks {
		path := filepath.Join(dir, task.Name(), "stat")
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread has ended
		}
		if err != nil {
			return nil, err
		}
		// "tid (comm) S ...": the state follows the last ')', as comm may hold one.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 || i+2 >= len(data) {
			return nil, fmt.Errorf("%s: unexpected %q", path, data)
		}
		states = append(states, data[i+2])
	}
	if len(states) == 0 {
		return nil, errors.New("exited")
	}
	return states, nil
}

// listenerOf reports whether the TCP port on which a socket listens, in this
// network namespace, is held by the process pid (a descriptor of pid is that
// socket). known is false when it cannot tell: no socket listens on port, or
// pid's descriptors cannot be read.
func listenerOf(pid, port int) (held, known bool) {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(data, []byte("\n"))[1:] {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := bytes.Fields(line)
			if len(f) < 10 || string(f[3]) != "0A" { // 0A: TCP_LISTEN
				continue
			}
			_, hexPort, ok := bytes.Cut(f[1], []byte(":"))
			if !ok {
				continue
			}
			if p, err := strconv.ParseUint(string(hexPort), 16, 16); err == nil && int(p) == port {
				inodes["socket:["+string(f[9])+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return false, false
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false, false
	}
	for _, fd := range fds {
		if link, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && inodes[link] {
			return true, true
		}
	}
	return false, true
}
