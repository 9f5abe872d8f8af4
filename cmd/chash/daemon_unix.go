//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// daemonEnv names the descriptor on which a proxy that --daemonize started
// tells the process that started it how its start went.
const daemonEnv = "CHASH_DAEMON_FD"

// daemonReady is the byte a daemon writes once it serves; anything else it
// writes is its start's error.
const daemonReady = 0x06

// daemonChild returns the pipe of a proxy that daemonize started, and nil in
// any other process.
func daemonChild() *os.File {
	v, ok := os.LookupEnv(daemonEnv)
	if !ok {
		return nil
	}
	os.Unsetenv(daemonEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	return os.NewFile(uintptr(fd), "daemon start pipe")
}

// daemonStarted tells the process waiting in daemonize that the daemon serves.
func daemonStarted(pipe *os.File) {
	pipe.Write([]byte{daemonReady})
	pipe.Close()
}

// daemonize runs the program's command line, argv, again as a daemon, as
// nutcracker's -d does: in a session of its own (no controlling terminal, so
// no hangup when the terminal goes), standard input, output and error on
// /dev/null, the working directory kept so that relative paths still name
// the same files, and no other descriptor of the process that started it
// (a pipe of an ssh session or a shell's command substitution, which would
// wait for the daemon to end). Go cannot fork a running program, so the daemon is a new
// process of the same executable, which re-reads its flags and files.
//
// It waits until the daemon serves (its listeners open, its pid file
// written), so that an init script that starts it finds it serving, and
// returns 0; or until it fails to start, and then copies its error to
// stderr and returns its exit status. One that neither serves nor fails
// within wait is stopped, and daemonize returns 1.
func daemonize(argv []string, stderr io.Writer, wait time.Duration) (int, error) {
	if len(argv) == 0 {
		return 1, errors.New("the program's command line is not known")
	}
	exe, err := os.Executable()
	if err != nil {
		return 1, fmt.Errorf("cannot find the program to start again: %w", err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return 1, err
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return 1, err
	}
	defer r.Close()
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        argv, // argv[0] too: a link named nutcracker stays one
		Env:         append(os.Environ(), daemonEnv+"=3"),
		Stdin:       null,
		Stdout:      null,
		Stderr:      null,
		ExtraFiles:  []*os.File{w}, // descriptor 3
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	closeInherited()
	err = cmd.Start()
	w.Close()
	if err != nil {
		return 1, fmt.Errorf("cannot start the daemon: %w", err)
	}
	said := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r) // until the daemon closes the pipe or exits
		said <- b
	}()
	select {
	case b := <-said:
		if len(b) == 1 && b[0] == daemonReady {
			cmd.Process.Release()
			return 0, nil
		}
		stderr.Write(b)
		err := cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			return exit.ExitCode(), nil
		}
		if len(b) == 0 {
			return 1, fmt.Errorf("the daemon (pid %d) ended before it served: %v", cmd.Process.Pid, err)
		}
		return 1, nil
	case <-time.After(wait):
		cmd.Process.Kill()
		cmd.Wait()
		return 1, fmt.Errorf("the daemon (pid %d) did not serve within %v: stopped", cmd.Process.Pid, wait)
	}
}

// closeInherited marks close-on-exec the descriptors past standard error that
// this process inherited open across exec (its own Go opens so): the
// daemon's would hold them open for as long as it lives.
func closeInherited() {
	dir := "/proc/self/fd"
	if _, err := os.Stat(dir); err != nil {
		dir = "/dev/fd"
	}
	names, err := os.ReadDir(dir) // its own descriptor is closed after
	if err != nil {
		return
	}
	for _, e := range names {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
