// Package testprog starts the external programs that chash's tests run beside
// themselves — memcached, redis-server, etcd, nutcracker, nginx, java, node —
// and stops them by PID, in the manner of net/http/httptest.
//
// A test that needs a program that is not installed is skipped, naming the
// program and the one command that installs everything the tests need
// (InstallCommand), except in CI: when the environment variable CI is set to
// anything (.ci/run and CI services set CI=true), a missing program fails the
// test, because a skip there would hide a missing install.
//
// Start is the entry for tests: it finds the program, starts it, waits until
// it is ready (a port accepts connections, or a check of the caller's passes)
// and stops it when the test ends. Program.Start does the same for code that
// has no testing.TB, such as the golden-file generators; it returns errors
// instead.
//
// Nothing is ever killed by name: each process is stopped through its PID,
// first with SIGTERM, then after a grace period with SIGKILL. On Linux a
// process also gets SIGKILL if the test binary dies without stopping it, as
// when go test's -timeout panics.
package testprog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// InstallCommand installs, on a Debian or Ubuntu machine, every program and
// package that chash's tests need (the Debian packages of .ci/apt-packages,
// through sudo, and the npm packages of .ci/setup.d); it is run from the
// repository's root. Skip messages name it.
const InstallCommand = ".ci/install"

// ErrMissing is wrapped by the errors about programs, or other prerequisites
// such as a header file or an npm package, that are not installed.
var ErrMissing = errors.New("not installed")

// Default limits of a Program whose fields leave them zero.
const (
	// DefaultTimeout bounds the wait for a program to be ready. Programs start
	// in milliseconds, a JVM in a second, but a loaded machine running tests
	// under -race is slow.
	DefaultTimeout = 20 * time.Second
	// DefaultGrace is how long Stop waits after SIGTERM before SIGKILL.
	DefaultGrace = 5 * time.Second
)

// outputLimit bounds the output kept of each process: enough for any log a
// test reads, not enough for a runaway program to exhaust memory.
const outputLimit = 16 << 20

// CI reports whether the tests run in CI: the environment variable CI is set
// to anything but the empty string.
func CI() bool { return os.Getenv("CI") != "" }

// sbinDirs are searched after PATH: Debian installs nginx and nutcracker
// there, and a user's PATH often lacks them.
var sbinDirs = []string{"/usr/local/sbin", "/usr/sbin", "/sbin"}

// Find returns the path of the named program: name itself if it contains a
// path separator, else the first executable of that name in PATH, then in the
// sbin directories. The error for a missing program wraps ErrMissing.
func Find(name string) (string, error) {
	if strings.ContainsRune(name, filepath.Separator) || strings.ContainsRune(name, '/') {
		if err := executable(name); err != nil {
			return "", fmt.Errorf("testprog: %s: %w", name, err)
		}
		return name, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range sbinDirs {
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", Missing(name)
}

// executable returns nil if path is an executable file.
func executable(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return ErrMissing
	case err != nil:
		return err
	case st.IsDir() || st.Mode()&0o111 == 0:
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// Missing returns the error that what (a program, a header file, an npm
// package) is not installed; it wraps ErrMissing.
func Missing(what string) error {
	return fmt.Errorf("testprog: %s %w", what, ErrMissing)
}

// LookPath returns the path of the named program, as Find finds it. If the
// program is missing, the test is skipped, or fails when CI is set.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	path, err := Find(name)
	Require(t, err)
	return path
}

// Require ends the test if err is not nil: with a skip that names the missing
// thing and InstallCommand if err wraps ErrMissing and CI is not set, and as a
// failure otherwise.
func Require(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	what := strings.TrimPrefix(err.Error(), "testprog: ")
	switch {
	case !errors.Is(err, ErrMissing):
		t.Fatal(err)
	case CI():
		t.Fatalf("%s; CI=%s must install it: %s (from the repository's root)", what, os.Getenv("CI"), InstallCommand)
	default:
		t.Skipf("%s; install: %s (from the repository's root)", what, InstallCommand)
	}
}

// A Program says how to start an external program and how to tell that it is
// ready. Only Name is required.
type Program struct {
	// Name is the program's name, looked up as Find does, or its path.
	Name string
	// Args are the arguments after the program's name.
	Args []string
	// Env is the program's environment. If nil, it is the test's own.
	Env []string
	// Dir is the program's working directory. If empty, it is the test's.
	Dir string
	// Output, if not nil, takes the program's standard output and error
	// (a pipe, say) instead of the Proc, whose Output is then empty.
	Output *os.File
	// Ready reports whether the started program is ready for the test, such as
	// Listening(addr). Start calls it, every 10ms, until it returns nil, the
	// program exits or Timeout passes; ctx ends at that deadline. If nil, a
	// program is ready once started.
	Ready func(ctx context.Context) error
	// Timeout bounds the wait for Ready, and Stop's wait after SIGKILL. If
	// zero, it is DefaultTimeout.
	Timeout time.Duration
	// Grace is how long Stop waits for the program to exit after SIGTERM
	// before it sends SIGKILL. If zero, it is DefaultGrace.
	Grace time.Duration
}

// Start starts p for the test t and waits until it is ready; the process is
// stopped when the test ends. A missing program skips the test, or fails it
// when CI is set; any other error fails it.
func Start(t testing.TB, p Program) *Proc {
	t.Helper()
	proc, err := startFor(t, p)
	if err != nil {
		t.Fatal(err)
	}
	return proc
}

// startFor is Start returning the error of a program that does not start: it
// skips t for a missing program (or fails it when CI is set), and stops a
// started one when t ends.
func startFor(t testing.TB, p Program) (*Proc, error) {
	t.Helper()
	p.Name = LookPath(t, p.Name)
	proc, err := p.Start()
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := proc.Stop(); err != nil {
			t.Error(err)
		}
	})
	return proc, nil
}

// Start starts the program and waits until it is ready. If it exits first, or
// is not ready within Timeout, it is stopped and the error includes its output.
// A missing program's error wraps ErrMissing. The caller must Stop the Proc.
func (p Program) Start() (*Proc, error) {
	path, err := Find(p.Name)
	if err != nil {
		return nil, err
	}
	proc := &Proc{prog: p, path: path, name: filepath.Base(path)}
	if err := proc.start(); err != nil {
		return nil, err
	}
	return proc, nil
}

// A Proc is a running (or exited) program started by Start. Its methods are
// safe for concurrent use.
type Proc struct {
	prog Program
	path string
	name string

	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *Buffer
	done chan struct{} // closed when cmd has exited
	err  error         // cmd.Wait's result, once done is closed
}

// errExited is wrapped by start's error when the program exits before it is
// ready.
var errExited = errors.New("exited before it was ready")

// start starts the process and waits until it is ready.
func (p *Proc) start() error {
	cmd := exec.Command(p.path, p.prog.Args...)
	cmd.Env, cmd.Dir = p.prog.Env, p.prog.Dir
	out := &Buffer{Limit: outputLimit}
	cmd.Stdout, cmd.Stderr = out, out
	if p.prog.Output != nil {
		cmd.Stdout, cmd.Stderr = p.prog.Output, p.prog.Output
	}
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testprog: start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.out, p.done, p.err = cmd, out, done, nil
	p.mu.Unlock()
	go p.wait(cmd, done)

	if p.prog.Ready == nil {
		return nil
	}
	timeout := orDefault(p.prog.Timeout, DefaultTimeout)
	deadline := time.Now().Add(timeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	ctx = context.WithValue(ctx, pidKey{}, cmd.Process.Pid)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		err := p.prog.Ready(ctx)
		if err != nil && last != nil && !time.Now().Before(deadline) {
			err = last // the deadline cut this check short: say why the last failed
		}
		last = err
		if err == nil {
			if p.Exited() { // ready, as another process on its port is
				return fmt.Errorf("testprog: %s %w (%v): %s", p, errExited, p.Err(), tail(out.String()))
			}
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("testprog: %s %w (%v): %s", p, errExited, p.Err(), tail(out.String()))
		case <-ctx.Done():
			p.Stop()
			return fmt.Errorf("testprog: %s not ready after %v: %v: %s", p, timeout, err, tail(out.String()))
		case <-tick.C:
		}
	}
}

// wait waits for cmd to exit and records how it did.
func (p *Proc) wait(cmd *exec.Cmd, done chan struct{}) {
	err := cmd.Wait()
	p.mu.Lock()
	if p.done == done {
		p.err = err
	}
	p.mu.Unlock()
	close(done)
}

// orDefault returns d, or def if d is zero.
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// String returns the program's name and PID, for messages: "memcached (pid 42)".
func (p *Proc) String() string {
	return fmt.Sprintf("%s (pid %d)", p.name, p.Pid())
}

// Pid returns the process's ID.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Output returns what the process has written so far to its standard output
// and standard error, interleaved as written. After Restart it is the new
// process's.
func (p *Proc) Output() string {
	p.mu.Lock()
	out := p.out
	p.mu.Unlock()
	return out.String()
}

// Done returns a channel that is closed when the process exits.
func (p *Proc) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

// Err returns how the process exited, as exec.Cmd.Wait reports it: nil for a
// zero exit status. It is nil while the process runs.
func (p *Proc) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Wait waits up to d for the process to exit and returns how it did (nil for
// status 0), or an error saying it still runs.
func (p *Proc) Wait(d time.Duration) error {
	select {
	case <-p.Done():
		return p.Err()
	case <-time.After(d):
		return fmt.Errorf("testprog: %s still running after %v", p, d)
	}
}

// Signal sends sig to the process. It is an error if the process has exited.
func (p *Proc) Signal(sig os.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	select {
	case <-done:
		return fmt.Errorf("testprog: signal %v to %s: exited (%v)", sig, p, p.Err())
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("testprog: signal %v to %s: %w", sig, p, err)
	}
	return nil
}

// Freeze stops the process with SIGSTOP, as a hung server: it keeps its
// connections and listening socket but answers nothing until Thaw. On Linux it
// returns once every thread of the process has stopped.
func (p *Proc) Freeze() error { return p.stop(sigStop, true) }

// Thaw resumes a frozen process with SIGCONT. On Linux it returns once the
// process runs again.
func (p *Proc) Thaw() error { return p.stop(sigCont, false) }

// stop sends sig, SIGSTOP or SIGCONT, and waits until the process is stopped
// or no longer is.
func (p *Proc) stop(sig os.Signal, stopped bool) error {
	if err := p.Signal(sig); err != nil {
		return err
	}
	if err := waitStopped(p.Pid(), stopped, orDefault(p.prog.Timeout, DefaultTimeout)); err != nil {
		return fmt.Errorf("testprog: %v to %s: %w", sig, p, err)
	}
	return nil
}

// Stop ends the process: SIGTERM (and SIGCONT, so that a frozen process acts
// on it), then SIGKILL if it has not exited after the program's Grace. It
// waits for the process to exit; stopping an exited process does nothing. It
// is an error only if the process survives SIGKILL for the program's Timeout.
func (p *Proc) Stop() error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	select {
	case <-done:
		return nil
	default:
	}
	terminate(cmd.Process) // errors only if the process has just exited
	select {
	case <-done:
		return nil
	case <-time.After(orDefault(p.prog.Grace, DefaultGrace)):
	}
	cmd.Process.Kill()
	select {
	case <-done:
		return nil
	case <-time.After(orDefault(p.prog.Timeout, DefaultTimeout)):
		return fmt.Errorf("testprog: %s still running %v after SIGKILL", p, orDefault(p.prog.Timeout, DefaultTimeout))
	}
}

// Restart stops the process if it runs and starts the program again with the
// same arguments, waiting until it is ready, as a crashed server comes back.
func (p *Proc) Restart() error {
	if err := p.Stop(); err != nil {
		return err
	}
	return p.start()
}

// tail returns the end of a program's output, enough to explain a failure.
func tail(s string) string {
	s = strings.TrimSpace(s)
	const max = 4000
	if len(s) > max {
		s = "..." + s[len(s)-max:]
	}
	return s
}
