package proxy

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/redistest"
	"github.com/chash-dev/chash/internal/testprog"
)

// runClient runs a client program (redis-cli, redis-benchmark) with stdin
// and returns its standard output and error; it fails the test if the
// program fails or runs for more than a minute.
func runClient(t *testing.T, name, stdin string, args ...string) (string, string) {
	t.Helper()
	path := testprog.LookPath(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %q: %v\n%s%s", name, args, err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// redisCLIArgs returns redis-cli's arguments to reach addr with a password.
func redisCLIArgs(addr, password string, more ...string) []string {
	host, port, _ := strings.Cut(addr, ":")
	return append([]string{"-h", host, "-p", port, "-a", password, "--no-auth-warning"}, more...)
}

// TestRedisCLI runs scripted redis-cli sessions through a pool with a
// password and against a redis-server: the output is the same, but for the
// commands the proxy refuses; and redis-cli --pipe, a mass insertion, loads
// every key without error.
func TestRedisCLI(t *testing.T) {
	servers := startRedisServers(t, 3, "--requirepass", "sesame")
	direct := redistest.Start(t, "--requirepass", "sesame")
	p := startProxy(t, redisPoolYAML("redis_auth: sesame", servers...))
	addr := p.Addr("alpha").String()
	script := strings.Join([]string{
		"PING",
		"SET greeting \"hello world\"",
		"GET greeting",
		"APPEND greeting !",
		"MSET a 1 b 2 c 3 d 4",
		"MGET a b c d e",
		"INCRBY a 41",
		"HSET user:1 name Ada lang Go",
		"HGETALL user:1",
		"RPUSH queue x y z",
		"LRANGE queue 0 -1",
		"SADD tags 3 1 2",
		"SMEMBERS tags",
		"ZADD board 10 ann 20 bob",
		"ZRANGE board 0 -1 WITHSCORES",
		"EXISTS a b none",
		"DEL a b c d",
		"TTL greeting",
		"ECHO \"line\\nbreak\"",
		"GET",
		"NOSUCH command",
	}, "\n") + "\n"
	want, _ := runClient(t, "redis-cli", script, redisCLIArgs(direct.Addr, "sesame")...)
	got, _ := runClient(t, "redis-cli", script, redisCLIArgs(addr, "sesame")...)
	if got != want {
		t.Errorf("redis-cli through the proxy:\n%s\nredis-server:\n%s", got, want)
	}
	got, _ = runClient(t, "redis-cli", "KEYS *\nSELECT 1\nMULTI\nSET greeting bye\nDISCARD\nGET greeting\n", redisCLIArgs(addr, "sesame")...)
	// redis-cli prints an empty line after an error when not on a terminal.
	if want := "ERR command 'keys' is not supported by the proxy\n\n" +
		"ERR database 1 is not served by the proxy (only 0)\n\n" +
		"ERR command 'multi' is not supported by the proxy\n\n" +
		replyNotRun + "\n\n" +
		"OK\n" +
		"hello world!\n"; got != want {
		t.Errorf("redis-cli, commands the proxy refuses:\n%q\nwant\n%q", got, want)
	}
	got, _ = runClient(t, "redis-cli", "GET greeting\n", redisCLIArgs(addr, "wrong")...)
	if !strings.Contains(got, "NOAUTH Authentication required.") {
		t.Errorf("redis-cli with a wrong password: %q; want NOAUTH", got)
	}

	var mass strings.Builder
	const n = 5000
	for i := range n {
		mass.WriteString(redistest.Request("SET", fmt.Sprint("mass:", i), fmt.Sprint(i)))
	}
	got, _ = runClient(t, "redis-cli", mass.String(), redisCLIArgs(addr, "sesame", "--pipe")...)
	if !strings.Contains(got, fmt.Sprintf("errors: 0, replies: %d", n)) {
		t.Errorf("redis-cli --pipe: %q", got)
	}
	stored := 0
	for _, s := range servers {
		for _, k := range s.Keys() {
			if strings.HasPrefix(k, "mass:") {
				stored++
			}
		}
	}
	if stored != n {
		t.Errorf("after redis-cli --pipe, %d keys on the servers; want %d", stored, n)
	}
}

// TestRedisBenchmark runs redis-benchmark's GET, SET, INCR, LPUSH and MSET
// (10 keys) through a pool of three servers, unpipelined and 16 deep: every
// test completes, and the servers hold what they did, exactly: the counter
// INCR raised, the list LPUSH grew.
func TestRedisBenchmark(t *testing.T) {
	servers := startRedisServers(t, 3)
	p := startProxy(t, redisPoolYAML("timeout: 5000", servers...))
	host, port, _ := strings.Cut(p.Addr("alpha").String(), ":")
	const requests = 2000
	runs := 0
	for _, pipe := range []string{"1", "16"} {
		out, errs := runClient(t, "redis-benchmark", "", "-h", host, "-p", port, "-t", "get,set,incr,lpush,mset",
			"-n", fmt.Sprint(requests), "-c", "8", "-P", pipe, "--csv")
		runs++
		for _, test := range []string{`"SET"`, `"GET"`, `"INCR"`, `"LPUSH"`, `"MSET (10 keys)"`} {
			if !strings.Contains(out, "\n"+test+",") {
				t.Errorf("redis-benchmark -P %s: no result for %s:\n%s", pipe, test, out)
			}
		}
		// redis-benchmark asks for CONFIG, which the proxy refuses; any other
		// error is a failure.
		if rest := strings.ReplaceAll(errs, "WARNING: Could not fetch server CONFIG", ""); strings.TrimSpace(rest) != "" {
			t.Errorf("redis-benchmark -P %s: %s", pipe, errs)
		}
	}
	var counter, list string
	for _, s := range servers {
		if v := s.Do("GET", "counter:__rand_int__"); v != "$-1\r\n" {
			counter = v
		}
		if v := s.Do("LLEN", "mylist"); v != ":0\r\n" {
			list = v
		}
	}
	want := fmt.Sprint(runs * requests)
	if counter != fmt.Sprintf("$%d\r\n%s\r\n", len(want), want) || list != ":"+want+"\r\n" {
		t.Errorf("after the runs, INCR's counter is %q and LPUSH's list %q long; want %s each", counter, list, want)
	}
}
