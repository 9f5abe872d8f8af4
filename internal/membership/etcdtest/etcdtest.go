// Package etcdtest starts real etcd servers (Debian's etcd-server) on free
// 127.0.0.1 ports for tests, and stops them by PID, in the manner of
// internal/memcachedtest.
//
// A test that needs etcd is skipped where it is not installed, except in CI:
// when the environment variable CI is set to anything, a missing etcd fails
// the test, because a skip there would hide a missing install.
package etcdtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// startTimeout bounds the wait for a new etcd to report itself healthy: it
// takes about a second to elect itself, longer on a loaded machine.
const startTimeout = 30 * time.Second

// LookPath returns the path of etcd. If it is missing the test is skipped,
// or fails when CI is set.
func LookPath(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("etcdtest: etcd not installed (CI must install etcd-server: .ci/apt-packages): %v", err)
		}
		t.Skip("etcd not installed; install: apt-get install etcd-server")
	}
	return path
}

// A Server is an etcd process of a one-member cluster started by Start. Its
// methods must not be called concurrently.
type Server struct {
	// Endpoint is the server's client address, "127.0.0.1:port"; it stays the
	// same across Restart.
	Endpoint string

	t        testing.TB
	bin, dir string
	peer     string        // the peer URL
	cmd      *exec.Cmd     // nil while stopped
	done     chan struct{} // closed when cmd has exited
	logs     string        // the file of the process's standard error
	client   *clientv3.Client
}

// Start starts etcd on free ports of 127.0.0.1 with a data directory of its
// own and waits until it reports itself healthy. It is stopped when the test
// ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		Endpoint: "127.0.0.1:" + strconv.Itoa(freePort(t)),
		t:        t,
		bin:      LookPath(t),
		dir:      filepath.Join(t.TempDir(), "etcd"),
		peer:     "http://127.0.0.1:" + strconv.Itoa(freePort(t)),
	}
	t.Cleanup(s.Stop)
	s.start()
	return s
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: free port on 127.0.0.1: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (s *Server) start() {
	s.t.Helper()
	client := "http://" + s.Endpoint
	cmd := exec.Command(s.bin,
		"--name", "etcdtest",
		"--data-dir", s.dir,
		"--listen-client-urls", client,
		"--advertise-client-urls", client,
		"--listen-peer-urls", s.peer,
		"--initial-advertise-peer-urls", s.peer,
		"--initial-cluster", "etcdtest="+s.peer,
		"--logger", "zap",
		"--log-outputs", "stderr",
		"--log-level", "warn",
	)
	s.logs = s.dir + ".log"
	logs, err := os.OpenFile(s.logs, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatalf("etcdtest: %v", err)
	}
	defer logs.Close() // the process has its own descriptor
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("etcdtest: start etcd on %s: %v", s.Endpoint, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		cmd.Wait()
		close(done)
	}(s.done)

	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := hc.Get(client + "/health")
		if err == nil {
			var body bytes.Buffer
			body.ReadFrom(resp.Body)
			resp.Body.Close()
			if strings.Contains(body.String(), `"health":"true"`) {
				return
			}
			err = fmt.Errorf("/health: %s", strings.TrimSpace(body.String()))
		}
		select {
		case <-s.done:
			s.cmd = nil
			s.t.Fatalf("etcdtest: etcd on %s exited before it was healthy (%v): %s", s.Endpoint, cmd.ProcessState, s.Logs())
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.t.Fatalf("etcdtest: etcd on %s not healthy after %v: %v: %s", s.Endpoint, startTimeout, err, s.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Signal sends sig to the running server: fault tests freeze it with SIGSTOP
// and thaw it with SIGCONT. It fails the test if the server is stopped.
func (s *Server) Signal(sig os.Signal) {
	s.t.Helper()
	if s.cmd == nil {
		s.t.Fatalf("etcdtest: signal %v to etcd on %s: stopped", sig, s.Endpoint)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("etcdtest: signal %v to etcd on %s (pid %d): %v", sig, s.Endpoint, s.cmd.Process.Pid, err)
	}
}

// Stop kills the server (SIGKILL, which also ends a frozen one) by its PID and
// waits for it to exit. Its data stays for Restart. Stopping a stopped server
// does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill() // fails only if it has exited already
	<-s.done
	s.cmd = nil
}

// Restart stops the server if it runs and starts it again on the same
// address, with its data, as a crashed etcd comes back.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Wipe stops the server if it runs, removes its data and starts it again on
// the same address: a new cluster whose revisions begin again at 1, as after
// a lost disk.
func (s *Server) Wipe() {
	s.t.Helper()
	s.Stop()
	if err := os.RemoveAll(s.dir); err != nil {
		s.t.Fatal(err)
	}
	s.start()
}

// Logs returns what the server has written to its standard error, across
// restarts.
func (s *Server) Logs() string {
	b, _ := os.ReadFile(s.logs)
	return string(b)
}

// Client returns the test's client of the server, for it to write keys; it
// reconnects across Restart and is closed when the test ends.
func (s *Server) Client() *clientv3.Client {
	s.t.Helper()
	if s.client == nil {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, Logger: zap.NewNop()})
		if err != nil {
			s.t.Fatalf("etcdtest: client of %s: %v", s.Endpoint, err)
		}
		s.t.Cleanup(func() { c.Close() })
		s.client = c
	}
	return s.client
}

// Put sets key to value with Client, failing the test on an error, and
// returns the revision of the change.
func (s *Server) Put(key, value string, opts ...clientv3.OpOption) int64 {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := s.Client().Put(ctx, key, value, opts...)
	if err != nil {
		s.t.Fatalf("etcdtest: put %q: %v", key, err)
	}
	return resp.Header.Revision
}

// Delete removes key, failing the test on an error, and returns the revision
// of the change.
func (s *Server) Delete(key string) int64 {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := s.Client().Delete(ctx, key)
	if err != nil {
		s.t.Fatalf("etcdtest: delete %q: %v", key, err)
	}
	return resp.Header.Revision
}
