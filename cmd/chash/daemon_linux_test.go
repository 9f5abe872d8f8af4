package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

// TestProxyDaemonize starts chash, linked as nutcracker, as Debian's init
// script for nutcracker does: -t with its options (-d among them), then
// start-stop-daemon with -d. The start returns once the daemon serves, its
// pid file written; the daemon runs in a session of its own, holds no
// descriptor of the command that started it (a pipe it inherited would keep
// an ssh session or a $(...) waiting), logs to its -o file, and stops at
// start-stop-daemon --stop, removing its pid file. A daemon that cannot
// start has its error and status returned by the command.
func TestProxyDaemonize(t *testing.T) {
	ssd := testprog.LookPath(t, "start-stop-daemon")
	s := memcachedtest.Start(t)
	dir := t.TempDir()
	link := filepath.Join(dir, "nutcracker")
	if err := os.Symlink(buildChash(t), link); err != nil {
		t.Fatal(err)
	}
	listen := testprog.FreeAddr(t)
	conf := filepath.Join(dir, "nutcracker.yml")
	yaml := fmt.Sprintf("alpha:\n  listen: %s\n  servers:\n   - %s:1 one\n", listen, s.Addr)
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, pidFile := filepath.Join(dir, "nutcracker.log"), filepath.Join(dir, "nutcracker.pid")
	opts := []string{"-c", conf, "-p", pidFile, "-o", logFile, "-s", "0", "--admin", "", "-d"}

	run := func(name string, args []string, extra ...*os.File) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = chashEnv()
		cmd.ExtraFiles = extra
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("%s %q did not return within 30s: %s", name, args, out)
		}
		return string(out), err
	}

	if out, err := run(link, append([]string{"-t"}, opts...)); err != nil || !strings.Contains(out, "syntax is ok") {
		t.Fatalf("-t %q: %v\n%s", opts, err, out)
	}

	// The start, with a pipe's write end as descriptor 9 as well (past
	// those the daemon is given).
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	begun := time.Now()
	out, err := run(ssd, append([]string{"--start", "--quiet", "--pidfile", pidFile, "--exec", link, "--"}, opts...), append(make([]*os.File, 6), w)...)
	w.Close()
	if err != nil {
		t.Fatalf("start-stop-daemon --start: %v\n%s", err, out)
	}
	b, err := os.ReadFile(pidFile) // written before the start returned
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Fatalf("pid file after the start returned: %q, %v", b, err)
	}
	t.Cleanup(func() {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	t.Logf("daemon pid %d, serving %v after the start began", pid, time.Since(begun))
	if sid := statField(t, pid, 6); sid != strconv.Itoa(pid) {
		t.Errorf("daemon's session %s; want its own, %d", sid, pid)
	}
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := r.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the pipe the start inherited: read %d, %v; want EOF, the daemon holding no end of it", n, err)
	}

	c := dialText(t, listen)
	if got := c.roundTrip("set k 0 0 1\r\nv\r\n"); got != "STORED\r\n" {
		t.Errorf("set through the daemon = %q", got)
	}
	if got := c.roundTrip("get k\r\n"); got != "VALUE k 0 1\r\nv\r\nEND\r\n" {
		t.Errorf("get through the daemon = %q", got)
	}
	c.c.Close()

	if out, err := run(ssd, []string{"--stop", "--quiet", "--retry", "5", "--pidfile", pidFile, "--exec", link}); err != nil {
		t.Errorf("start-stop-daemon --stop: %v\n%s", err, out)
	}
	if !poll(5*time.Second, func() bool { return !alive(pid) }) {
		t.Errorf("daemon %d alive after --stop", pid)
	}
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file after the stop: %v; want it removed", err)
	}
	if lg, _ := os.ReadFile(logFile); !bytes.Contains(lg, []byte("proxy shut down")) {
		t.Errorf("the daemon's log (-o) lacks its shutdown:\n%s", lg)
	}

	// A daemon that cannot start (its pid file's directory is missing,
	// which only the daemon finds): its error and status come back.
	bad := append(opts[:len(opts):len(opts)], "-p", filepath.Join(dir, "missing", "x.pid"))
	out, err = run(link, bad)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "--pid-file") || !strings.Contains(out, "missing") {
		t.Errorf("-d with a pid file that cannot be written: %v\n%s\nwant status 1 and the daemon's --pid-file error", err, out)
	}
}

// alive reports whether process pid lives: it exists and is not a zombie (a
// daemon's parent, init, may not have reaped it yet).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := bytes.Cut(b, []byte(") "))
	return len(rest) > 0 && rest[0] != 'Z'
}

// statField returns field n (1-based, as proc(5) numbers them) of
// /proc/PID/stat.
func statField(t *testing.T, pid, n int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndexByte(b, ')') // the command may hold spaces
	f := strings.Fields(string(b[i+2:]))
	if n-3 >= len(f) {
		t.Fatalf("/proc/%d/stat: %q has no field %d", pid, b, n)
	}
	return f[n-3]
}
