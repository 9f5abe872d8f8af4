package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/membership/etcdtest"
)

// serversFromLines are the servers of the pools of TestServersFromOffline,
// listed in a configuration, in a file and under an etcd prefix.
var serversFromLines = []string{
	"10.0.0.1:11211:1 one",
	"10.0.0.2:11211:1 two",
	"10.0.0.3:11211:2 three",
}

// serversFromPool returns a configuration of one pool "a" whose servers are
// given by the YAML lines servers (a servers: list or a servers_from: key).
func serversFromPool(servers string) string {
	return "a:\n  distribution: ketama\n  hash: md5\n  hash_tag: \"{}\"\n" + servers
}

// offlineRuns are the command lines, after "--config FILE", whose output must
// not depend on where the pool's servers are listed.
var offlineRuns = [][]string{
	{"route", "user:1", "user:2", "{user:3}x", "session:42", ""},
	{"analyze"},
	{"analyze", "--format", "json"},
	{"diff", "--add", "10.0.0.4:11211:1 four", "--format", "json"},
	{"diff", "--remove", "two"},
}

// runOffline runs each of offlineRuns on conf and returns their outputs with
// conf's path replaced by CONF.
func runOffline(t *testing.T, conf string) []string {
	t.Helper()
	var outs []string
	for _, run := range offlineRuns {
		args := []string{run[0], "--config", conf}
		if run[0] == "diff" {
			args = append(append([]string{run[0]}, run[1:]...), conf)
		} else {
			args = append(args, run[1:]...)
		}
		stdout, stderr, code := runChash(t, nil, args...)
		if code != 0 || stderr != "" {
			t.Fatalf("chash %q = %d, stderr:\n%s", args, code, stderr)
		}
		outs = append(outs, strings.ReplaceAll(stdout, conf, "CONF"))
	}
	return outs
}

// TestServersFromOffline: route, analyze and diff of a pool whose servers
// live in a file or under an etcd prefix print exactly what they print for
// the same servers listed in the configuration.
func TestServersFromOffline(t *testing.T) {
	dir := t.TempDir()
	listed := filepath.Join(dir, "listed.yml")
	writeFile(t, listed, serversFromPool("  servers:\n   - "+strings.Join(serversFromLines, "\n   - ")+"\n"))
	want := runOffline(t, listed)
	if n := strings.Count(want[0], "\n"); n != len(offlineRuns[0])-1 {
		t.Fatalf("chash route of %d keys printed %d lines:\n%s", len(offlineRuns[0])-1, n, want[0])
	}
	check := func(t *testing.T, conf string) {
		t.Helper()
		for i, got := range runOffline(t, conf) {
			if got != want[i] {
				t.Errorf("chash %q of %s:\n%s\nwant, as with servers listed in the configuration:\n%s", offlineRuns[i], conf, got, want[i])
			}
		}
	}

	t.Run("file", func(t *testing.T) {
		list := filepath.Join(dir, "cache.servers")
		writeFile(t, list, "# the cache tier\n"+strings.Join(serversFromLines, "\n")+"\n")
		conf := filepath.Join(dir, "file.yml")
		writeFile(t, conf, serversFromPool("  servers_from: file:"+list+"\n"))
		check(t, conf)
	})
	t.Run("etcd", func(t *testing.T) {
		e := etcdtest.Start(t)
		for i, line := range serversFromLines {
			e.Put(fmt.Sprintf("/chash/cache/%d", i), line)
		}
		e.Put("/chash/cache2/x", "10.9.9.9:11211:1 outside") // another prefix: not read
		conf := filepath.Join(dir, "etcd.yml")
		writeFile(t, conf, serversFromPool("  servers_from: etcd://"+e.Endpoint+"/chash/cache/\n"))
		check(t, conf)
	})
}

// TestServersFromOfflineErrors: a servers_from that cannot be read, or reads
// a list that is not valid or is empty, fails route, analyze and diff with
// one line naming the configuration's line, the pool and the problem: exit
// status 2 for a value that is no URL (a usage error, as any bad key), 1 for
// a list that cannot be used.
func TestServersFromOfflineErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(name, data string) string {
		path := filepath.Join(dir, name)
		writeFile(t, path, data)
		return "file:" + path
	}
	tests := []struct {
		name, from string
		code       int
		want       string
	}{
		{"not a server line", file("bad.servers", "10.0.0.1:11211:1 one\nbogus\n"), 1,
			`bad.servers:2: server "bogus": want "host:port:weight [name]"`},
		{"a name twice", file("dup.servers", "10.0.0.1:11211:1 one\n10.0.0.2:11211:1 one\n"), 1,
			`dup.servers:2: server "10.0.0.2:11211:1 one": name "one" is also the server's on line 1`},
		{"no servers", file("empty.servers", "# none yet\n"), 1, "empty.servers lists no servers"},
		{"no file", "file:" + filepath.Join(dir, "none.servers"), 1, "none.servers: no such file or directory"},
		{"no prefix", "etcd://127.0.0.1:2379", 2, `no key prefix: want "etcd://HOST:PORT/PREFIX/"`},
		{"prefix without slash", "etcd://127.0.0.1:2379/chash", 2, `key prefix "/chash" does not end in "/"`},
		{"unknown scheme", "http://127.0.0.1/x/", 2, `want "etcd://HOST:PORT/PREFIX/" or "file:PATH"`},
	}
	for _, tt := range tests {
		conf := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yml")
		writeFile(t, conf, serversFromPool("  servers_from: \""+tt.from+"\"\n"))
		for _, args := range [][]string{
			{"route", "--config", conf, "k"},
			{"analyze", "--config", conf},
			{"diff", "--add", "10.0.0.9:11211:1", conf},
		} {
			stdout, stderr, code := runChash(t, nil, args...)
			prefix := fmt.Sprintf("chash %s: %s:5: pool \"a\": ", args[0], conf)
			if code != tt.code || stdout != "" || !strings.HasPrefix(stderr, prefix) || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("%s: chash %s: exit status %d, stdout %q, stderr\n%s\nwant %d, none and one line starting\n%s\nand saying\n%s",
					tt.name, args[0], code, stdout, stderr, tt.code, prefix, tt.want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "none.servers")); err == nil {
		t.Error("reading a servers_from file created it")
	}
}
