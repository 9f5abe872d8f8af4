package main

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/testprog"
)

func writeConfig(t *testing.T, yaml string) string {
	path := filepath.Join(t.TempDir(), "nutcracker.yml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProxyTestConf checks --test-conf, which validates like nutcracker -t,
// and the other flags that end the command before it serves, nutcracker's
// as its init scripts write them.
func TestProxyTestConf(t *testing.T) {
	good := writeConfig(t, "alpha:\n  listen: 127.0.0.1:22121\n  servers:\n   - 127.0.0.1:11211:1\n")
	three := writeConfig(t, "alpha:\n  listen: 127.0.0.1:22121\n  servers:\n   - 127.0.0.1:11211:1\n   - 127.0.0.1:11212:1\n   - 127.0.0.1:11213:1\n")
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"--config", good, "--test-conf"}, 0, "syntax is ok", ""},
		{[]string{"--config", three, "--test-conf"}, 0, "syntax is ok", "chash proxy: warning: " + three + ":1: pool \"alpha\": hash fnv1a_64 on ketama sends keys that differ only in their last character to one server (1000 of 1000 groups)"},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  bogus: 1\n  servers:\n   - 127.0.0.1:11211:1\n"), "--test-conf"}, 2, "", `unknown key "bogus"`},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  redis: true\n  redis_auth: pw\n  redis_db: 2\n  servers:\n   - 127.0.0.1:6379:1\n"), "--test-conf"}, 0, "syntax is ok", ""},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  redis: true\n  redis_db: -1\n  servers:\n   - 127.0.0.1:6379:1\n"), "--test-conf"}, 2, "", `redis_db "-1" is not a number`},
		{[]string{"--config", writeConfig(t, "alpha:\n  servers:\n   - 127.0.0.1:11211:1\n"), "--test-conf"}, 2, "", "no listen address"},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:22121\n  servers:\n   - 127.0.0.1:11211:1\nbeta:\n  listen: localhost:22121\n  servers:\n   - 127.0.0.1:11211:1\n"), "--test-conf"}, 2, "",
			`:6: pool "beta": listen 127.0.0.1:22121: pool "alpha" (line 2) listens there too`},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: no-such-host.invalid:22121\n  servers:\n   - 127.0.0.1:11211:1\n"), "--test-conf"}, 2, "",
			`:2: pool "alpha": listen tcp: lookup no-such-host.invalid`},
		{[]string{"--config", filepath.Join(t.TempDir(), "missing.yml"), "--test-conf"}, 2, "", "no such file"},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  tls_cert_file: /nonexistent/c.pem\n  tls_key_file: /nonexistent/k.pem\n  servers:\n   - 127.0.0.1:11211:1\n"), "--test-conf"}, 2, "", `:3: pool "alpha": tls_cert_file "/nonexistent/c.pem", tls_key_file "/nonexistent/k.pem": open /nonexistent/c.pem: no such file`},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  eject_errors: true\n  servers:\n   - 127.0.0.1:11211:1\n"), "--test-conf"}, 2, "", `:3: pool "alpha": eject_errors: true needs auto_eject_hosts: true`},
		// A servers_from URL is checked, its list not read (etcd may be out of reach).
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  servers_from: file:/nonexistent/cache.servers\n"), "--test-conf"}, 0, "syntax is ok", ""},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  servers_from: etcd://127.0.0.1:1/chash\n"), "--test-conf"}, 2, "", `:3: pool "alpha": servers_from "etcd://127.0.0.1:1/chash": key prefix "/chash" does not end in "/"`},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  servers_from: file:/x\n  servers: [127.0.0.1:11211:1]\n"), "--test-conf"}, 2, "", "servers_from and servers (line 4) both given"},
		{[]string{"--test-conf"}, 2, "", "--test-conf needs --config"},
		{[]string{"--config", good, "extra"}, 2, "", "unexpected arguments"},
		{[]string{"--config", good, "--tls-cert", "x"}, 2, "", "go together"},
		{[]string{"--config", good, "--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem", "--test-conf"}, 2, "",
			"--tls-cert /nonexistent/c.pem --tls-key /nonexistent/k.pem: open /nonexistent/c.pem: no such file"},
		{[]string{"--config", good, "--max-memory", "0"}, 2, "", "--max-memory 0: want a positive number of bytes"},
		{[]string{"--config", good, "--max-bulk", "0"}, 2, "", "--max-bulk 0: want positive numbers of bytes"},
		{[]string{"--config", good, "--idle-timeout", "-1s"}, 2, "", "--idle-timeout -1s: want 0 (idle clients stay) or a positive duration"},
		// nutcracker's flags, as its init scripts use them
		{[]string{"-t", "-c", good}, 0, "syntax is ok", ""},
		{[]string{"-tc", good}, 0, "syntax is ok", ""},
		{[]string{"--test-conf", "--conf-file=" + good}, 0, "syntax is ok", ""},
		{[]string{"-t", "-c", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  bogus: 1\n  servers:\n   - 127.0.0.1:11211:1\n"), "-v", "6"}, 2, "", `unknown key "bogus"`},
		{[]string{"-D"}, 0, `server_ejected_at       "timestamp when server was ejected in usec since epoch"`, ""},
		{[]string{"--describe-stats"}, 0, `client_eof              "# eof on client connections"`, ""},
		{[]string{"-V"}, 0, "chash ", ""},
		{[]string{"-h"}, 0, "-stats-port PORT", ""},
		{[]string{"-t", "-d", "-c", good}, 0, "syntax is ok", ""}, // Debian's init script checks with -d
		// -d: a bad FILE fails before a daemon starts (TestProxyDaemonize starts one)
		{[]string{"-d", "-c", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  bogus: 1\n  servers:\n   - 127.0.0.1:11211:1\n")}, 2, "", `unknown key "bogus"`},
		{[]string{"-c", good, "-v", "12"}, 2, "", `verbosity "12": want a level from 0 to 11`},
		{[]string{"-c", good, "-s", "70000"}, 2, "", "--stats-port 70000: want a port from 1 to 65535, or 0 for none"},
		{[]string{"-c", good, "--admin", "127.0.0.1:99999"}, 2, "", `--admin "127.0.0.1:99999": port "99999" is not a number from 0 to 65535`},
		{[]string{"-c", good, "--admin", "127.0.0.1"}, 2, "", `--admin "127.0.0.1": want HOST:PORT: address 127.0.0.1: missing port in address`},
		{[]string{"-c", good, "--admin", "no-such-host.invalid:22223"}, 2, "", `--admin "no-such-host.invalid:22223": lookup no-such-host.invalid`},
		{[]string{"-c", good, "-a", "300.1.1.1"}, 2, "", `--stats-addr "300.1.1.1": lookup 300.1.1.1`},
		{[]string{"-c", good, "-a", "no-such-host.invalid", "-s", "0", "-t"}, 0, "syntax is ok", ""}, // no stats port: no address to check
		{[]string{"-c", good, "-o", filepath.Join(t.TempDir(), "no", "such", "dir", "log")}, 1, "", "--output: open "},
	}
	for _, tt := range tests {
		args := append([]string{"proxy"}, tt.args...)
		stdout, stderr, code := runChash(t, nil, args...)
		if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("chash %q = %d\n%s%s\nwant %d, output with %q and %q", args, code, stdout, stderr, tt.code, tt.stdout, tt.stderr)
		}
	}
	// A hash that spreads similar keys: no warning.
	md5 := writeConfig(t, "alpha:\n  listen: 127.0.0.1:22121\n  hash: md5\n  servers:\n   - 127.0.0.1:11211:1\n   - 127.0.0.1:11212:1\n")
	if stdout, stderr, code := runChash(t, nil, "proxy", "-t", "-c", md5); code != 0 || stderr != "" || !strings.Contains(stdout, "syntax is ok") {
		t.Errorf("chash proxy -t -c (md5) = %d\n%s%s\nwant 0, syntax is ok and nothing on stderr", code, stdout, stderr)
	}
}

// TestNutcrackerGetopt checks the getopt forms of nutcracker's command line
// that proxy rewrites for the flag package, and that chash's own flags stay
// as they are.
func TestNutcrackerGetopt(t *testing.T) {
	tests := []struct{ in, want string }{
		{"-c /etc/n.yml -v 6", "-c /etc/n.yml -v=6"},
		{"-v6 -c/etc/n.yml -s22222 -a127.0.0.1", "-v=6 -c=/etc/n.yml -s=22222 -a=127.0.0.1"},
		{"-dt", "-d -t"},
		{"-tc /etc/n.yml", "-t -c /etc/n.yml"},
		{"-tc/etc/n.yml", "-t -c=/etc/n.yml"},
		{"-Dv11", "-D -v=11"},
		{"-Dv 0", "-D -v=0"},
		{"-v", "-v"},
		{"-v --test-conf", "-v --test-conf"},
		{"--verbose 7", "--verbose=7"},
		{"--verbose=7 -m 512", "--verbose=7 -m 512"},
		{"-procs 2 -admin :1 -log-json", "-procs 2 -admin :1 -log-json"},
		{"-x", "-x"},
		{"-cx -- -v6", "-c=x -- -v6"},
		{"-zq", "-zq"},
	}
	c := newProxy()
	for _, tt := range tests {
		if got := strings.Join(nutcrackerGetopt(&c.Flag, strings.Fields(tt.in)), " "); got != tt.want {
			t.Errorf("nutcrackerGetopt(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// TestVerbosityLevels checks the slog level of each of nutcracker's levels.
func TestVerbosityLevels(t *testing.T) {
	for _, tt := range []struct {
		v    verbosity
		want slog.Level
	}{{0, slog.LevelError}, {3, slog.LevelError}, {4, slog.LevelWarn}, {5, slog.LevelInfo}, {6, slog.LevelInfo}, {7, slog.LevelDebug}, {11, slog.LevelDebug}} {
		if got := tt.v.level(); got != tt.want {
			t.Errorf("verbosity(%d).level() = %v; want %v", tt.v, got, tt.want)
		}
	}
}

// FuzzNutcrackerGetopt checks the rewriting of nutcracker's command line on
// any arguments: it never panics, keeps every argument after "--" as it is,
// loses no character of an argument it does not split, and rewriting its own
// output changes nothing.
func FuzzNutcrackerGetopt(f *testing.F) {
	for _, seed := range []string{"-c /etc/n.yml -v 6", "-v6 -dt -s22222", "-tc/x -- -v6", "-procs 2 -v", "--verbose 7 -Dv11", "-", "-v -5", "-cv"} {
		f.Add(seed)
	}
	fs := &newProxy().Flag
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, " ")
		out := nutcrackerGetopt(fs, args)
		if again := nutcrackerGetopt(fs, out); !slices.Equal(again, out) {
			t.Errorf("nutcrackerGetopt(%q) = %q, and again %q", args, out, again)
		}
		if i := slices.Index(args, "--"); i >= 0 {
			j := slices.Index(out, "--")
			if j < 0 || !slices.Equal(out[j:], args[i:]) {
				t.Errorf("nutcrackerGetopt(%q) = %q: what follows -- changed", args, out)
			}
		}
		strip := func(s []string) string {
			return strings.NewReplacer("-", "", "=", "").Replace(strings.Join(s, ""))
		}
		if strip(out) != strip(args) {
			t.Errorf("nutcrackerGetopt(%q) = %q: characters changed", args, out)
		}
	})
}

// TestPidFileFirst: a pid file that cannot be written stops the proxy before
// it listens (a restart stops the old process once the new one listens), and
// a pid file is removed at exit only if it holds the process's own id.
func TestPidFileFirst(t *testing.T) {
	listen := testprog.FreeAddr(t)
	conf := writeConfig(t, "alpha:\n  listen: "+listen+"\n  servers:\n   - 127.0.0.1:1:1\n")
	bad := filepath.Join(t.TempDir(), "no", "such", "dir", "pid")
	_, stderr, code := runChash(t, nil, "proxy", "-c", conf, "-p", bad, "--admin", "", "-s", "0")
	if code != 1 || !strings.Contains(stderr, "--pid-file: open ") || strings.Contains(stderr, "listening") {
		t.Errorf("chash proxy with pid file %s = %d\n%s\nwant 1, a --pid-file error and no listener opened", bad, code, stderr)
	}

	dir := t.TempDir()
	mine, other := filepath.Join(dir, "mine.pid"), filepath.Join(dir, "other.pid")
	for _, path := range []string{mine, other} {
		pf, err := openPidFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := pf.write(); err != nil {
			t.Fatal(err)
		}
		if path == other { // a restart's new process writes its own id
			if err := os.WriteFile(other, []byte("4194305\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		pf.remove()
	}
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Errorf("pid file holding this process's id after remove: %v; want it gone", err)
	}
	if b, err := os.ReadFile(other); string(b) != "4194305\n" {
		t.Errorf("pid file another process wrote, after remove: %q, %v; want it kept", b, err)
	}
	// Checked and never written (the proxy failed to start): no file is
	// left where there was none, another's stays as it was.
	if _, err := openPidFile(mine); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Errorf("pid file checked and never written: %v; want none", err)
	}
	if pf, err := openPidFile(other); err != nil {
		t.Fatal(err)
	} else {
		pf.remove()
	}
	if b, err := os.ReadFile(other); string(b) != "4194305\n" {
		t.Errorf("another's pid file, checked and never written, after remove: %q, %v; want it kept", b, err)
	}
	// A restart whose old process exits, removing the file it wrote, after
	// the new one checked it and before it writes: the new id is written.
	old, err := openPidFile(mine)
	if err != nil {
		t.Fatal(err)
	}
	old.write()
	next, err := openPidFile(mine)
	if err != nil {
		t.Fatal(err)
	}
	old.remove()
	if err := next.write(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(mine); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("pid file written after the old process removed its own: %q, %v; want this process's id", b, err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %q", tmp)
	}
}

// TestAliasArgs: run as nutcracker, chash is chash proxy of nutcracker's
// configuration file, unless -c names another (a later flag wins).
func TestAliasArgs(t *testing.T) {
	tests := []struct{ argv0, args, want string }{
		{"/usr/sbin/nutcracker", "-t", "proxy --config /etc/nutcracker/nutcracker.yml -t"},
		{"nutcracker", "-c x.yml -s 22222", "proxy --config /etc/nutcracker/nutcracker.yml -c x.yml -s 22222"},
		{"/usr/bin/chash", "route --config x.yml", "route --config x.yml"},
		{"chash", "proxy", "proxy"},
	}
	for _, tt := range tests {
		if got := strings.Join(aliasArgs(tt.argv0, strings.Fields(tt.args)), " "); got != tt.want {
			t.Errorf("aliasArgs(%q, %q) = %q; want %q", tt.argv0, tt.args, got, tt.want)
		}
	}
	_, stderr, code := runChash(t, nil, aliasArgs("nutcracker", []string{"-t", "-c", "testdata/two.yml"})...)
	if code != 0 {
		t.Errorf("as nutcracker, -t -c testdata/two.yml = %d, %s; want 0 (-c wins)", code, stderr)
	}
}

// TestProxyStartupErrors checks what chash proxy says when it cannot start,
// with and without --test-conf: one prefix, the command's, then the file and
// line, then the problem; never the names of the packages the error passed
// through ("chash proxy: proxy: sf.yml:3: ...").
func TestProxyStartupErrors(t *testing.T) {
	server := "  servers:\n   - 127.0.0.1:11211:1\n"
	missing := filepath.Join(t.TempDir(), "missing.yml")
	tests := []struct {
		name, yaml string
		code       int
		want       string // after "chash proxy: FILE"
	}{
		{"bad distribution", "alpha:\n  listen: 127.0.0.1:1\n  distribution: nope\n" + server, 2,
			`:3: pool "alpha": distribution "nope" is unknown`},
		{"bad listen port", "alpha:\n  listen: 127.0.0.1:99999\n" + server, 2,
			`:2: pool "alpha": listen "127.0.0.1:99999": port "99999" is not a number in 1..65535`},
		{"listen host that does not resolve", "alpha:\n  listen: no-such-host.invalid:22121\n" + server, 2,
			`:2: pool "alpha": listen tcp: lookup no-such-host.invalid`},
		{"bad servers_from URL", "alpha:\n  listen: 127.0.0.1:1\n  servers_from: ftp://x/y\n", 2,
			`:3: pool "alpha": servers_from "ftp://x/y": want "etcd://HOST:PORT/PREFIX/" or "file:PATH"`},
		{"servers_from prefix", "alpha:\n  listen: 127.0.0.1:1\n  servers_from: etcd://127.0.0.1:1/chash\n", 2,
			`:3: pool "alpha": servers_from "etcd://127.0.0.1:1/chash": key prefix "/chash" does not end in "/"`},
		{"no pools", "", 2, `: no pools`},
		{"unreadable file", "", 2, ": no such file or directory"},
	}
	for _, tt := range tests {
		path := missing
		if tt.name != "unreadable file" {
			path = writeConfig(t, tt.yaml)
		}
		want := "chash proxy: " + path + tt.want
		if tt.name == "unreadable file" {
			want = "chash proxy: open " + path + tt.want
		}
		for _, args := range [][]string{
			{"proxy", "--config", path, "--admin", "", "--stats-port", "0"},
			{"proxy", "--config", path, "--test-conf"},
		} {
			_, stderr, code := runChash(t, nil, args...)
			line, _, _ := strings.Cut(stderr, "\n")
			if code != tt.code || !strings.HasPrefix(line, want) {
				t.Errorf("%s: chash %q = %d\n%s\nwant %d and a line beginning\n%s", tt.name, args, code, stderr, tt.code, want)
			}
		}
	}
	// A list that cannot be read at start: the source's error, once
	// located, names no package either.
	path := writeConfig(t, "alpha:\n  listen: "+testprog.FreeAddr(t)+"\n  servers_from: file:/nonexistent/cache.servers\n")
	_, stderr, code := runChash(t, nil, "proxy", "--config", path, "--admin", "", "--stats-port", "0", "--source-timeout", "1s")
	want := "chash proxy: " + path + `:3: pool "alpha": file:/nonexistent/cache.servers: open /nonexistent/cache.servers: no such file or directory`
	if code != 1 || !strings.Contains(stderr, want+"\n") {
		t.Errorf("chash proxy of an unreadable servers_from = %d\n%s\nwant 1 and\n%s", code, stderr, want)
	}
	// A listen address another program holds (without SO_REUSEPORT, as
	// nutcracker and memcached listen): the error names the listen line.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	path = writeConfig(t, "alpha:\n  listen: "+taken.Addr().String()+"\n"+server)
	_, stderr, code = runChash(t, nil, "proxy", "--config", path, "--admin", "", "--stats-port", "0")
	want = "chash proxy: " + path + `:2: pool "alpha": listen tcp4 ` + taken.Addr().String() + ": bind: address already in use"
	if code != 1 || !strings.Contains(stderr, want+"\n") {
		t.Errorf("chash proxy on a listen address taken = %d\n%s\nwant 1 and\n%s", code, stderr, want)
	}
}
