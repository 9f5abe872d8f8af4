package proxy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/dist"
	"github.com/chash-dev/chash/internal/redistest"
)

// startRedisServers starts n redis-servers with the same arguments.
func startRedisServers(t testing.TB, n int, args ...string) []*redistest.Server {
	t.Helper()
	servers := make([]*redistest.Server, n)
	for i := range servers {
		servers[i] = redistest.Start(t, args...)
	}
	return servers
}

// redisOwner returns the name of the server that the first pool of yaml
// names for a key, through its hash tag.
func redisOwner(t testing.TB, yaml string) func(key string) string {
	t.Helper()
	pool := parseConfig(t, yaml).Pools[0]
	r, err := dist.Build(pool, pool.Servers)
	if err != nil {
		t.Fatal(err)
	}
	return func(key string) string {
		i, err := r.Lookup(pool.HashKey([]byte(key)))
		if err != nil {
			t.Fatal(err)
		}
		return pool.Servers[i].Name()
	}
}

// TestRedisCommandsMatch sends redisScript to a redis-server, to chash proxy
// in front of three and to nutcracker in front of three others with the
// same server names: chash proxy answers as Redis does (or as the script
// says, for what it refuses), nutcracker as the script says. Then every key,
// stored through either proxy, is on the server chash proxy's ring names.
func TestRedisCommandsMatch(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			defer SetProcs(SetProcs(procs))
			viaChash, viaNutcracker := startRedisServers(t, 3), startRedisServers(t, 3)
			direct := redistest.Start(t)
			yaml := redisPoolYAML(`hash_tag: "{}"`, viaChash...)
			p := startProxy(t, yaml)
			ncAddr := startNutcracker(t, redisPoolYAML(`hash_tag: "{}"`, viaNutcracker...))
			pc := redistest.Dial(t, p.Addr("alpha").String())
			nc := redistest.Dial(t, ncAddr)
			dc := redistest.Dial(t, direct.Addr)
			for _, tc := range redisScript {
				args := strings.Split(tc.req, " ")
				want := tc.proxy
				if want == "" {
					want = dc.Do(args...)
				}
				if got := pc.Do(args...); got != want {
					t.Errorf("%s through chash proxy = %q; want %q", tc.req, got, want)
				}
				nc.Send(redistest.Request(args...))
				got, err := nc.ReadErr()
				switch {
				case tc.nc == ncCloses && err == nil:
					t.Errorf("%s through nutcracker = %q; the script says it closes the connection", tc.req, got)
				case tc.nc == ncCloses:
					nc = redistest.Dial(t, ncAddr)
				case err != nil:
					t.Fatalf("%s through nutcracker: %v", tc.req, err)
				case tc.nc == ncSame && got != want:
					t.Errorf("%s through nutcracker = %q; want %q", tc.req, got, want)
				case tc.nc == ncOther && got == want:
					t.Errorf("%s through nutcracker = %q, as Redis; the script says it differs", tc.req, got)
				}
			}
			if !pc.Closed() {
				t.Error("QUIT did not close the connection")
			}
			owner := redisOwner(t, yaml)
			stored := 0
			for i := range viaChash {
				name := fmt.Sprintf("s%d", i+1)
				keys := viaChash[i].Keys()
				stored += len(keys)
				for _, k := range keys {
					if o := owner(k); o != name {
						t.Errorf("key %q is on %s; the ring names %s", k, name, o)
					}
				}
				for _, k := range viaNutcracker[i].Keys() {
					if o := owner(k); o != name {
						t.Errorf("nutcracker put key %q on %s; chash proxy's ring names %s", k, name, o)
					}
				}
			}
			if want := len(direct.Keys()); stored != want {
				t.Errorf("%d keys stored through chash proxy; %d in the redis-server sent the script directly", stored, want)
			}
		})
	}
}

// TestRedisPlacementMatchesNutcracker stores keys through chash proxy and
// reads them through nutcracker with the same configuration and servers, for
// several hashes and distributions: every key is found, and asked directly,
// only the server the ring names has it.
func TestRedisPlacementMatchesNutcracker(t *testing.T) {
	for _, opts := range []string{
		"",
		"hash: md5\nhash_tag: \"{}\"",
		"hash: murmur\ndistribution: modula",
		"hash: crc32a\ndistribution: ketama",
		"hash: fnv1a_32\nhash_tag: \"::\"",
	} {
		t.Run(strings.ReplaceAll(opts, "\n", ","), func(t *testing.T) {
			servers := startRedisServers(t, 3)
			yaml := redisPoolYAML(opts, servers...)
			p := startProxy(t, yaml)
			pc := redistest.Dial(t, p.Addr("alpha").String())
			nc := redistest.Dial(t, startNutcracker(t, yaml))
			owner := redisOwner(t, yaml)
			want := map[string][]string{}
			for i := range 200 {
				key := fmt.Sprintf("user:%d", i)
				switch i % 4 {
				case 1:
					key = fmt.Sprintf("{tag%d}:%d", i%7, i)
				case 2:
					key = fmt.Sprintf("a:%d:b", i%5)
				}
				if got := pc.Do("SET", key, key); got != "+OK\r\n" {
					t.Fatalf("SET %s through chash proxy = %q", key, got)
				}
				if got, w := nc.Do("GET", key), "$"+fmt.Sprint(len(key))+"\r\n"+key+"\r\n"; got != w {
					t.Fatalf("GET %s through nutcracker = %q; want %q", key, got, w)
				}
				o := owner(key)
				if !slices.Contains(want[o], key) {
					want[o] = append(want[o], key)
				}
			}
			for i, s := range servers {
				name := fmt.Sprintf("s%d", i+1)
				w := want[name]
				slices.Sort(w)
				if got := s.Keys(); !slices.Equal(got, w) {
					t.Errorf("keys on %s = %q; the ring names %q", name, got, w)
				}
			}
			if len(want) < 3 {
				t.Errorf("keys on %d servers of 3", len(want))
			}
		})
	}
}
