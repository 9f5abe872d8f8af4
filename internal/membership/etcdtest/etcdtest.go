// Package etcdtest starts real etcd servers (Debian's etcd-server) on free
// 127.0.0.1 ports for tests, through internal/testprog: a test is skipped
// where etcd is not installed, and fails in CI; each server is stopped by its
// PID when the test ends.
package etcdtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/chash-dev/chash/internal/testprog"
)

// A Server is an etcd process of a one-member cluster started by Start. Its
// methods must not be called concurrently.
type Server struct {
	// Endpoint is the server's client address, "127.0.0.1:port"; it stays the
	// same across Restart and Wipe.
	Endpoint string

	t      testing.TB
	dir    string // the data directory
	proc   *testprog.Proc
	client *clientv3.Client
}

// Start starts etcd on free ports of 127.0.0.1 with a data directory of its
// own and waits until it reports itself healthy. It is stopped when the test
// ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, dir: filepath.Join(t.TempDir(), "etcd")}
	proc, addrs := testprog.StartOnFreePorts(t, 2, func(addrs []string) testprog.Program {
		os.RemoveAll(s.dir) // what a start that failed began
		client, peer := "http://"+addrs[0], "http://"+addrs[1]
		return testprog.Program{
			Name: "etcd",
			Args: []string{
				"--name", "etcdtest",
				"--data-dir", s.dir,
				"--listen-client-urls", client,
				"--advertise-client-urls", client,
				"--listen-peer-urls", peer,
				"--initial-advertise-peer-urls", peer,
				"--initial-cluster", "etcdtest=" + peer,
				"--logger", "zap",
				"--log-outputs", "stderr",
				"--log-level", "warn",
			},
			Ready: healthy(client),
			// etcd elects itself in about a second; a loaded machine running
			// tests under -race is slower.
			Timeout: 30 * time.Second,
		}
	})
	s.proc, s.Endpoint = proc, addrs[0]
	return s
}

// healthy returns a Ready check that holds once etcd's /health says so.
func healthy(client string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, "GET", client+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if !strings.Contains(string(body), `"health":"true"`) {
			return fmt.Errorf("/health: %s", strings.TrimSpace(string(body)))
		}
		return nil
	}
}

// Freeze stops the server with SIGSTOP, as a hung etcd: it keeps its
// connections but answers nothing until Thaw.
func (s *Server) Freeze() {
	s.t.Helper()
	if err := s.proc.Freeze(); err != nil {
		s.t.Fatal(err)
	}
}

// Thaw resumes a frozen server.
func (s *Server) Thaw() {
	s.t.Helper()
	if err := s.proc.Thaw(); err != nil {
		s.t.Fatal(err)
	}
}

// Kill kills the server with SIGKILL, as a crash, and waits for it to exit.
// Its data stays for Restart.
func (s *Server) Kill() {
	s.t.Helper()
	if s.proc.Exited() {
		return
	}
	if err := s.proc.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatal(err)
	}
	if err := s.proc.Wait(30 * time.Second); err == nil || !s.proc.Exited() {
		s.t.Fatalf("etcdtest: %v after SIGKILL: %v", s.proc, err)
	}
}

// Restart stops the server if it runs and starts it again on the same
// address, with its data, as a crashed etcd comes back.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.proc.Restart(); err != nil {
		s.t.Fatal(err)
	}
}

// Wipe kills the server, removes its data and starts it again on the same
// address: a new cluster whose revisions begin again at 1, as after a lost
// disk.
func (s *Server) Wipe() {
	s.t.Helper()
	s.Kill()
	if err := os.RemoveAll(s.dir); err != nil {
		s.t.Fatal(err)
	}
	s.Restart()
}

// Logs returns what the running server has written.
func (s *Server) Logs() string { return s.proc.Output() }

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
