package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestGoRedis drives a Redis pool with go-redis, a client applications use:
// it connects through HELLO 3, which the proxy refuses, then AUTH (the pool's
// redis_auth; its redis_db is the proxy's business, so the client uses
// database 0), and serves commands of every family, pipelines, scripts and
// many goroutines at once. Commands the proxy refuses fail with its error and
// leave the client working.
func TestGoRedis(t *testing.T) {
	servers := startRedisServers(t, 3, "--requirepass", "sesame")
	yaml := redisPoolYAML("redis_auth: sesame\nredis_db: 2\nhash_tag: \"{}\"", servers...)
	p := startProxy(t, yaml)
	owner := redisOwner(t, yaml)
	rdb := redis.NewClient(&redis.Options{
		Addr:         p.Addr("alpha").String(),
		Password:     "sesame",
		DialTimeout:  5 * time.Second,
		ReadTimeout:  5 * time.Second,
		WriteTimeout: 5 * time.Second,
		PoolSize:     8,
	})
	defer rdb.Close()
	ctx := context.Background()

	check := func(what string, got any, err error, want any) {
		t.Helper()
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, %v; want %v", what, got, err, want)
		}
	}
	pong, err := rdb.Ping(ctx).Result()
	check("Ping", pong, err, "PONG")
	check("Set", rdb.Set(ctx, "a", "1", 0).Val(), rdb.Set(ctx, "a", "1", 0).Err(), "OK")
	v, err := rdb.Get(ctx, "a").Result()
	check("Get", v, err, "1")
	if _, err := rdb.Get(ctx, "none").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("Get of a missing key: %v; want redis.Nil", err)
	}
	var kv []any
	var keys []string
	for i := range 20 {
		k := fmt.Sprint("k", i)
		keys = append(keys, k)
		kv = append(kv, k, i)
	}
	ok, err := rdb.MSet(ctx, kv...).Result()
	check("MSet of 20 keys", ok, err, "OK")
	vals, err := rdb.MGet(ctx, append(keys, "none")...).Result()
	check("MGet of 21 keys", vals, err, "[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 <nil>]")
	n, err := rdb.Exists(ctx, "k1", "k2", "none").Result()
	check("Exists", n, err, 2)
	n, err = rdb.Del(ctx, keys[:10]...).Result()
	check("Del of 10 keys", n, err, 10)
	n, err = rdb.Incr(ctx, "counter").Result()
	check("Incr", n, err, 1)
	check("HSet", rdb.HSet(ctx, "h", "f1", "v1", "f2", "v2").Val(), nil, 2)
	hv, err := rdb.HGetAll(ctx, "h").Result()
	check("HGetAll", hv, err, map[string]string{"f1": "v1", "f2": "v2"})
	rdb.RPush(ctx, "l", "a", "b", "c")
	lv, err := rdb.LRange(ctx, "l", 0, -1).Result()
	check("LRange", lv, err, []string{"a", "b", "c"})
	rdb.ZAdd(ctx, "z", redis.Z{Score: 2, Member: "two"}, redis.Z{Score: 1, Member: "one"})
	zv, err := rdb.ZRange(ctx, "z", 0, -1).Result()
	check("ZRange", zv, err, []string{"one", "two"})
	ev, err := rdb.Eval(ctx, "return redis.call('incrby', KEYS[1], ARGV[1]) + redis.call('incrby', KEYS[2], ARGV[1])", []string{"{e}1", "{e}2"}, 5).Result()
	check("Eval over two keys of one tag", ev, err, 10)
	apart := []string{"x"}
	for i := 0; len(apart) < 2; i++ {
		if k := fmt.Sprint("apart:", i); owner(k) != owner("x") {
			apart = append(apart, k)
		}
	}
	if _, err := rdb.Eval(ctx, "return 1", apart).Result(); err == nil || err.Error() != "ERR keys of 'eval' are on different servers" {
		t.Errorf("Eval over keys of different servers: %v; want an error saying so", err)
	}

	// A pipeline of 200 commands, split ones among them.
	cmds, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i := range 100 {
			pipe.Set(ctx, fmt.Sprint("p", i), i, 0)
			pipe.MGet(ctx, fmt.Sprint("p", i), fmt.Sprint("p", (i+1)%100))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("Pipelined: %v", err)
	}
	for i := range 100 {
		if got := cmds[2*i].(*redis.StatusCmd).Val(); got != "OK" {
			t.Errorf("pipelined SET %d = %q", i, got)
		}
		got := cmds[2*i+1].(*redis.SliceCmd).Val()
		if len(got) != 2 || got[0] != fmt.Sprint(i) {
			t.Errorf("pipelined MGET %d = %v", i, got)
		}
	}

	// Refused commands fail; the client goes on.
	if _, err := rdb.Keys(ctx, "*").Result(); err == nil || err.Error() != "ERR command 'keys' is not supported by the proxy" {
		t.Errorf("Keys: %v; want the proxy's refusal", err)
	}
	// go-redis then drops the connection of the transaction: its log says
	// it had unread data, the replies to INCR and EXEC after MULTI's.
	_, err = rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Incr(ctx, "tx:counter")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "'multi' is not supported") {
		t.Errorf("TxPipelined: %v; want the proxy's refusal of MULTI", err)
	}
	// and none of the transaction's commands ran.
	if n, err := rdb.Exists(ctx, "tx:counter").Result(); err != nil || n != 0 {
		t.Errorf("after the refused transaction, EXISTS tx:counter = %d, %v; want 0: INCR ran outside it", n, err)
	}
	v, err = rdb.Get(ctx, "a").Result()
	check("Get after refusals", v, err, "1")

	// Many goroutines over the client's pool of connections.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				k := fmt.Sprintf("g%d:%d", g, i)
				if err := rdb.Set(ctx, k, i, 0).Err(); err != nil {
					t.Errorf("Set %s: %v", k, err)
					return
				}
				if got, err := rdb.Get(ctx, k).Int(); err != nil || got != i {
					t.Errorf("Get %s = %d, %v; want %d", k, got, err, i)
					return
				}
			}
		}()
	}
	wg.Wait()

	// Everything went to database 2 of the servers.
	var all []string
	for _, s := range servers {
		all = append(all, s.KeysOf(2)...)
		if got := s.KeysOf(0); len(got) != 0 {
			t.Errorf("keys in database 0: %q", got)
		}
	}
	if !slices.Contains(all, "g7:99") || !slices.Contains(all, "counter") {
		t.Errorf("database 2 of the servers lacks keys go-redis set: %d keys", len(all))
	}
}

// TestGoRedisClientName: go-redis with ClientName names each connection with
// HELLO's SETNAME, or CLIENT SETNAME after AUTH, and fails the connection if
// that fails: through the proxy, as against Redis, its connections work and
// CLIENT GETNAME says the name; CLIENT ID is the id HELLO said.
func TestGoRedisClientName(t *testing.T) {
	servers := startRedisServers(t, 1, "--requirepass", "sesame")
	p := startProxy(t, redisPoolYAML("redis_auth: sesame", servers...))
	rdb := redis.NewClient(&redis.Options{
		Addr:        p.Addr("alpha").String(),
		Password:    "sesame",
		ClientName:  "billing-7",
		DialTimeout: 5 * time.Second,
		ReadTimeout: 5 * time.Second,
		PoolSize:    1,
	})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Set(ctx, "a", "1", 0).Err(); err != nil {
		t.Fatalf("Set through a named connection: %v", err)
	}
	if name, err := rdb.ClientGetName(ctx).Result(); err != nil || name != "billing-7" {
		t.Errorf("ClientGetName = %q, %v; want billing-7", name, err)
	}
	c := redistest.Dial(t, p.Addr("alpha").String())
	c.Do("AUTH", "sesame")
	hello := c.Do("HELLO", "2", "SETNAME", "x")
	if got := c.Do("CLIENT", "GETNAME"); got != "$1\r\nx\r\n" {
		t.Errorf("after HELLO 2 SETNAME x, CLIENT GETNAME = %q", got)
	}
	id := strings.TrimPrefix(c.Do("CLIENT", "ID"), ":")
	if !strings.Contains(hello, "$2\r\nid\r\n:"+id) {
		t.Errorf("CLIENT ID = %s; HELLO said %q", id, hello)
	}
}
