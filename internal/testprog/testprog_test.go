//go:build unix

package testprog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests start this test binary as the external program: with
// TESTPROG_HELPER set it runs helper instead of the tests, so the package's
// tests need no program that a fresh machine lacks.
func TestMain(m *testing.M) {
	if os.Getenv("TESTPROG_HELPER") != "" {
		os.Exit(helper(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helper is the program the tests start. "serve ADDR" listens on ADDR (a
// socket's path if it starts with '/') and answers each line with "pong",
// exiting 0 on SIGTERM; "stubborn ADDR" does the same but ignores SIGTERM;
// "fail" writes to standard error and exits 3.
func helper(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: no mode")
		return 2
	}
	switch args[0] {
	case "fail":
		fmt.Fprintln(os.Stderr, "boom: helper refuses to start")
		return 3
	case "serve", "stubborn":
	default:
		fmt.Fprintf(os.Stderr, "helper: unknown mode %q\n", args[0])
		return 2
	}
	term := make(chan os.Signal, 1)
	if args[0] == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(term, syscall.SIGTERM)
	}
	addr := args[1]
	l, err := net.Listen(Network(addr), addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("listening on %s\n", addr)
	fmt.Fprintln(os.Stderr, "ready on stderr")
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					c.Write([]byte("pong\n"))
				}
			}()
		}
	}()
	<-term
	fmt.Println("terminated")
	return 0
}

// helperProgram returns the Program that runs helper with args.
func helperProgram(t *testing.T, args ...string) Program {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Program{Name: exe, Args: args, Env: append(os.Environ(), "TESTPROG_HELPER=1")}
}

// ping sends a line to addr and returns the reply, or an error if none comes
// within wait.
func ping(addr string, wait time.Duration) (string, error) {
	c, err := net.DialTimeout(Network(addr), addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// gone reports whether no process has the PID any more.
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// TestStart starts a server, waits until it listens, reads its output, and
// freezes, thaws, kills and restarts it on the same address.
func TestStart(t *testing.T) {
	addr := FreeAddr(t)
	prog := helperProgram(t, "serve", addr)
	prog.Ready = Listening(addr)
	p := Start(t, prog)
	if got, err := ping(addr, 10*time.Second); got != "pong\n" || err != nil {
		t.Fatalf("ping %s = %q, %v; want pong", addr, got, err)
	}
	for _, want := range []string{"listening on " + addr, "ready on stderr"} {
		if out := p.Output(); !strings.Contains(out, want) {
			t.Errorf("Output() = %q; want it to hold %q", out, want)
		}
	}

	if err := p.Freeze(); err != nil {
		t.Fatal(err)
	}
	if got, err := ping(addr, 300*time.Millisecond); err == nil {
		t.Errorf("ping %s after Freeze = %q; want a timeout", addr, got)
	}
	if err := p.Thaw(); err != nil {
		t.Fatal(err)
	}
	if got, err := ping(addr, 10*time.Second); got != "pong\n" || err != nil {
		t.Errorf("ping %s after Thaw = %q, %v; want pong", addr, got, err)
	}

	pid := p.Pid()
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if err := p.Err(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Err() after SIGKILL = %v; want signal: killed", err)
	}
	if err := p.Signal(syscall.SIGCONT); err == nil {
		t.Error("Signal to an exited process: no error")
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	if p.Pid() == pid || p.Exited() || p.Err() != nil {
		t.Errorf("after Restart: pid %d (was %d), exited %v, Err %v; want a new running process", p.Pid(), pid, p.Exited(), p.Err())
	}
	if got, err := ping(addr, 10*time.Second); got != "pong\n" || err != nil {
		t.Errorf("ping %s after Restart = %q, %v; want pong", addr, got, err)
	}
}

// TestStop checks how Stop ends a process: a frozen one still gets its
// SIGTERM and exits by itself; one that ignores SIGTERM gets SIGKILL after the
// grace period; an exited one is left alone.
func TestStop(t *testing.T) {
	addr := filepath.Join(t.TempDir(), "helper.sock")
	prog := helperProgram(t, "serve", addr)
	prog.Ready = Listening(addr)
	p := Start(t, prog)
	if got, err := ping(addr, 10*time.Second); got != "pong\n" || err != nil {
		t.Fatalf("ping %s = %q, %v; want pong", addr, got, err)
	}
	if err := p.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Err(); err != nil || !strings.Contains(p.Output(), "terminated") {
		t.Errorf("Stop of a frozen process: Err %v, output %q; want exit 0 after SIGTERM", err, p.Output())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	addr = FreeAddr(t)
	prog = helperProgram(t, "stubborn", addr)
	prog.Ready = Listening(addr)
	prog.Grace = 100 * time.Millisecond
	p = Start(t, prog)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Err(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Stop of a process ignoring SIGTERM: Err %v; want signal: killed", err)
	}
}

// TestWait checks Wait on a running process and after it exits 0.
func TestWait(t *testing.T) {
	addr := FreeAddr(t)
	prog := helperProgram(t, "serve", addr)
	prog.Ready = Listening(addr)
	p := Start(t, prog)
	if err := p.Wait(10 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Errorf("Wait on a running process = %v; want still running", err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(time.Minute); err != nil {
		t.Errorf("Wait after SIGTERM = %v; want exit status 0", err)
	}
}

// TestStartErrors checks the errors of a program that exits before it is
// ready and of one that is never ready: each names the program, says what
// happened and quotes its output, and leaves no process behind.
func TestStartErrors(t *testing.T) {
	prog := helperProgram(t, "fail")
	prog.Ready = Listening(FreeAddr(t))
	_, err := prog.Start()
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready (exit status 3)") ||
		!strings.Contains(err.Error(), "boom: helper refuses to start") {
		t.Errorf("Start of a program exiting 3 = %v; want exited before it was ready, exit status 3, and its output", err)
	}

	// The second program listens, but its check never passes: Start stops it.
	// On a loaded machine it may not listen within the timeout: then try
	// again with a longer one.
	for timeout := 200 * time.Millisecond; ; timeout *= 2 {
		addr := FreeAddr(t)
		prog = helperProgram(t, "serve", addr)
		listened := false
		prog.Ready = func(ctx context.Context) error {
			if Listening(addr)(ctx) == nil {
				listened = true
			}
			return errors.New("never")
		}
		prog.Timeout = timeout
		prog.Grace = 100 * time.Millisecond
		_, err = prog.Start()
		if want := fmt.Sprintf("not ready after %v: never", timeout); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Start of a program never ready = %v; want %s", err, want)
		}
		if !listened && timeout < 10*time.Second {
			continue
		}
		if got, err := ping(addr, 10*time.Second); !listened || err == nil {
			t.Errorf("the program never ready: listened %v, and after Start's error ping %s = %q, %v; want it gone", listened, addr, got, err)
		}
		break
	}

	if _, err := (Program{Name: "testprog-no-such-program"}).Start(); !errors.Is(err, ErrMissing) {
		t.Errorf("Start of a missing program = %v; want ErrMissing", err)
	}
}

// TestCleanup checks that a process is gone, by its PID, once its test ends.
func TestCleanup(t *testing.T) {
	var pid int
	t.Run("start", func(t *testing.T) {
		addr := FreeAddr(t)
		prog := helperProgram(t, "serve", addr)
		prog.Ready = Listening(addr)
		pid = Start(t, prog).Pid()
	})
	if pid == 0 {
		t.Fatal("no process started")
	}
	// The cleanup waited for the process, so its PID is free (or reused by
	// another process, which is very unlikely this soon).
	if !gone(pid) {
		t.Errorf("helper (pid %d) after its test ended: kill -0 succeeds; want ESRCH", pid)
	}
}

// TestFind checks where Find looks: a path, PATH, then the sbin directories.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "testprog-sbin-only")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	saved := sbinDirs
	sbinDirs = []string{filepath.Join(dir, "none"), dir}
	t.Cleanup(func() { sbinDirs = saved })

	for _, tt := range []struct {
		name, want string
		missing    bool // the error wraps ErrMissing
	}{
		{prog, prog, false},
		{"testprog-sbin-only", prog, false},
		{"testprog-no-such-program", "", true},
		{filepath.Join(dir, "nothing"), "", true},
		{plain, "", false},
		{dir, "", false},
	} {
		got, err := Find(tt.name)
		if got != tt.want || (err == nil) != (tt.want != "") || errors.Is(err, ErrMissing) != tt.missing {
			t.Errorf("Find(%q) = %q, %v; want %q (missing %v)", tt.name, got, err, tt.want, tt.missing)
		}
	}
}

// TestRequire checks the rule for a missing program: skip naming it and the
// install command, unless CI is set to anything; and any other error fails.
func TestRequire(t *testing.T) {
	const missing = "testprog-no-such-program"
	for _, tt := range []struct {
		ci           string
		skip, failed bool
	}{
		{"", true, false},
		{"true", false, true},
		{"1", false, true},
	} {
		t.Run("CI="+tt.ci, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			tb := &recorder{TB: t}
			tb.run(func() { LookPath(tb, missing) })
			if tb.skipped != tt.skip || tb.failed != tt.failed {
				t.Errorf("LookPath(%q) with CI=%q: skipped %v, failed %v (%q); want skipped %v, failed %v",
					missing, tt.ci, tb.skipped, tb.failed, tb.msg, tt.skip, tt.failed)
			}
			for _, want := range []string{missing + " not installed", InstallCommand} {
				if !strings.Contains(tb.msg, want) {
					t.Errorf("LookPath(%q) with CI=%q says %q; want it to say %q", missing, tt.ci, tb.msg, want)
				}
			}
		})
	}

	t.Setenv("CI", "")
	tb := &recorder{TB: t}
	tb.run(func() { Require(tb, errors.New("javac: exit status 1")) })
	if !tb.failed || tb.msg != "javac: exit status 1" {
		t.Errorf("Require(t, an error that is not ErrMissing): failed %v, %q; want a failure quoting it", tb.failed, tb.msg)
	}
	tb = &recorder{TB: t}
	tb.run(func() { Require(tb, Missing("libmemcached-dev")) })
	if !tb.skipped || !strings.HasPrefix(tb.msg, "libmemcached-dev not installed; install: ") {
		t.Errorf("Require(t, Missing(%q)): skipped %v, %q; want a skip", "libmemcached-dev", tb.skipped, tb.msg)
	}

	want, err := Find("sh")
	if err != nil {
		t.Skip(err)
	}
	if got := LookPath(t, "sh"); got != want {
		t.Errorf("LookPath(%q) = %q; want %q", "sh", got, want)
	}
}

// recorder is a testing.TB whose Fatal, Fatalf and Skipf record the outcome
// and end the goroutine of run, as the real ones end the test's; the rest is
// the test's own TB, cleanups included.
type recorder struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recorder) Fatal(args ...any) {
	r.failed, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f in a goroutine of its own, as Fatalf and Skipf end it.
func (r *recorder) run(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// TestBuffer writes to a Buffer from several goroutines (go test -race checks
// the locking) and checks its limit.
func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("0123456789"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.Len(); got != 8000 {
		t.Errorf("Len() after 800 writes of 10 bytes = %d; want 8000", got)
	}

	lim := Buffer{Limit: 8}
	for _, s := range []string{"abc", "defgh", "ijk", "l"} {
		if n, err := lim.Write([]byte(s)); n != len(s) || err != nil {
			t.Errorf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
		}
	}
	if got, want := lim.String(), "abcdefgh\n[testprog: 4 more bytes dropped]"; got != want {
		t.Errorf("String() past the limit = %q; want %q", got, want)
	}
	if got := lim.Len(); got != 12 {
		t.Errorf("Len() past the limit = %d; want 12", got)
	}
	lim.Reset()
	lim.Write([]byte("xy"))
	if got := lim.String(); got != "xy" {
		t.Errorf("String() after Reset and Write(%q) = %q; want %q", "xy", got, "xy")
	}
}

// TestStartOnFreePorts takes the first port StartOnFreePorts offers with an
// outgoing connection, as another test's client can between FreePort and the
// program's listen: the program cannot listen and exits, and the next try, on
// other ports, starts it. A program that never starts fails after three tries.
func TestStartOnFreePorts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var tries [][]string
	proc, addrs := StartOnFreePorts(t, 2, func(addrs []string) Program {
		tries = append(tries, addrs)
		if len(tries) == 1 {
			local, err := net.ResolveTCPAddr("tcp", addrs[0])
			if err != nil {
				t.Fatal(err)
			}
			c, err := (&net.Dialer{LocalAddr: local}).Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
		}
		p := helperProgram(t, "serve", addrs[0])
		p.Ready = Listening(addrs[0])
		return p
	})
	if len(tries) != 2 || !slices.Equal(addrs, tries[1]) || addrs[0] == tries[0][0] {
		t.Fatalf("tries on %v, started on %v; want a second try, on another port, to start", tries, addrs)
	}
	if got, err := ping(addrs[0], 10*time.Second); got != "pong\n" || err != nil {
		t.Errorf("ping %s = %q, %v; want pong", addrs[0], got, err)
	}
	if proc.Exited() {
		t.Errorf("%v has exited: %s", proc, proc.Output())
	}

	n := 0
	tb := &recorder{TB: t}
	tb.run(func() {
		StartOnFreePorts(tb, 1, func(addrs []string) Program {
			n++
			p := helperProgram(t, "fail")
			p.Ready = Listening(addrs...)
			return p
		})
	})
	if n != 3 || !tb.failed || !strings.Contains(tb.msg, "exited before it was ready (exit status 3)") {
		t.Errorf("a program that never starts: %d tries, failed %v (%q); want 3 and a failure saying it exited", n, tb.failed, tb.msg)
	}
}

// TestExchange sends two lines to a server that answers each and closes the
// connection at the end of the input.
func TestExchange(t *testing.T) {
	addr := FreeAddr(t)
	p := helperProgram(t, "serve", addr)
	p.Ready = Listening(addr)
	proc, err := p.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Stop()
	if got := Exchange(t, addr, "ping\nping\n", 10*time.Second); got != "pong\npong\n" {
		t.Errorf("Exchange = %q; want two pongs", got)
	}
}

// TestListening checks the ready check on a TCP port and a Unix socket, and
// its error while one of them does not listen.
func TestListening(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	sock := filepath.Join(t.TempDir(), "s.sock")
	unix, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close()
	ctx := context.Background()
	if err := Listening(tcp.Addr().String(), sock)(ctx); err != nil {
		t.Errorf("Listening(%s, %s) = %v; want nil", tcp.Addr(), sock, err)
	}
	free := FreeAddr(t)
	if err := Listening(tcp.Addr().String(), free)(ctx); err == nil || !strings.HasPrefix(err.Error(), free+": ") {
		t.Errorf("Listening(%s, %s) with nothing on the second = %v; want an error naming it", tcp.Addr(), free, err)
	}
}

// TestListeningOthers: a port on which another process listens (here the test
// binary) does not make a started program ready, where the system tells who
// holds a socket (Linux); a program that listens on its own port is ready.
func TestListeningOthers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("which process holds a socket is read from Linux's /proc")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().String()
	mine := context.WithValue(context.Background(), pidKey{}, os.Getpid())
	if err := Listening(taken)(mine); err != nil {
		t.Errorf("Listening(%s) for the process that listens there = %v; want nil", taken, err)
	}

	own := FreeAddr(t)
	p := helperProgram(t, "serve", own)
	p.Ready = Listening(taken)
	p.Timeout = time.Second
	proc, err := p.Start()
	if err == nil {
		proc.Stop()
		t.Fatalf("a program ready on %s, where the test binary listens", taken)
	}
	if want := taken + ": another process listens there"; !strings.Contains(err.Error(), want) {
		t.Errorf("Start = %v; want it not ready: %q", err, want)
	}

	p.Ready = Listening(own)
	proc, err = p.Start()
	if err != nil {
		t.Fatalf("a program that listens on %s: %v", own, err)
	}
	proc.Stop()
}
