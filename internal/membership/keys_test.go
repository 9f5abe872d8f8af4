package membership

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chash-dev/chash/internal/config"
)

func TestKeyList(t *testing.T) {
	l := newKeyList()
	steps := []struct {
		op, key, value string // op "put" or "del"
		want           string // names() of the list, or a substring of its error
		bad            bool
	}{
		{"put", "/p/b", "10.0.0.2:11211:1 b", "b/1", false},
		{"put", "/p/a", "10.0.0.1:11211:2 a\n", "a/2 b/1", false}, // key order, not insertion order; white space trimmed
		{"put", "/p/c", "junk", `membership: src: key "/p/c": server "junk": want "host:port:weight [name]"`, true},
		{"put", "/p/c", "10.0.0.3:11211:1 a", `membership: src: key "/p/c": server name "a" is also key "/p/a"'s`, true},
		{"put", "/p/a", "10.0.0.1:11211:1 z", "z/1 b/1 a/1", false}, // renaming a's server ends the clash
		{"del", "/p/b", "", "z/1 a/1", false},
		{"del", "/p/nope", "", "z/1 a/1", false},
		{"put", "/p/d", "10.0.0.4:11211:1 a", `name "a" is also key "/p/c"'s`, true},
		{"put", "/p/e", "10.0.0.5:11211:1 a", `name "a" is also key "/p/c"'s`, true},
		{"del", "/p/c", "", `server name "a" is also key "/p/d"'s`, true}, // d and e still clash
		{"del", "/p/d", "", "z/1 a/1", false},
		{"del", "/p/a", "", "a/1", false},
		{"del", "/p/e", "", "", false}, // an empty prefix is an empty list
	}
	for _, st := range steps {
		if st.op == "put" {
			l.put(st.key, []byte(st.value))
		} else {
			l.del(st.key)
		}
		got, err := l.servers("src")
		switch {
		case st.bad && err == nil:
			t.Fatalf("after %s %q %q: list %q; want an error containing %q", st.op, st.key, st.value, names(got), st.want)
		case st.bad && !strings.Contains(err.Error(), st.want):
			t.Fatalf("after %s %q %q: %v; want an error containing %q", st.op, st.key, st.value, err, st.want)
		case !st.bad && err != nil:
			t.Fatalf("after %s %q %q: %v; want %q", st.op, st.key, st.value, err, st.want)
		case !st.bad && names(got) != st.want:
			t.Fatalf("after %s %q %q: list %q; want %q", st.op, st.key, st.value, names(got), st.want)
		}
	}
}

// naiveServers is keyList.servers computed from scratch: the model that the
// counting keyList must agree with.
func naiveServers(kv map[string]string) ([]config.Server, bool) {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	seen := map[string]bool{}
	var out []config.Server
	for _, k := range keys {
		s, err := parseLine(strings.TrimSpace(kv[k]))
		if err != nil || seen[s.Name()] {
			return nil, false
		}
		seen[s.Name()] = true
		out = append(out, s)
	}
	return out, true
}

// checkKeyOps applies ops, two bytes each (operation and key, value), to a
// keyList and to a map, and compares the list with naiveServers after each.
func checkKeyOps(t *testing.T, ops []byte) {
	values := []string{"h:1:1 a", "h:2:1 b", "h:3:2 a", "bad", "h:4:1", " h:4:1 \n", "h:5:1 c"}
	l := newKeyList()
	kv := map[string]string{}
	for i := 0; i+1 < len(ops); i += 2 {
		key := fmt.Sprintf("/p/%d", ops[i]&7)
		if ops[i]&8 != 0 {
			l.del(key)
			delete(kv, key)
		} else {
			v := values[int(ops[i+1])%len(values)]
			l.put(key, []byte(v))
			kv[key] = v
		}
		got, err := l.servers("p")
		want, ok := naiveServers(kv)
		if (err == nil) != ok || ok && !sameServers(got, want) {
			t.Fatalf("after ops %v: list %q, error %v; want %q, valid %v", ops[:i+2], names(got), err, names(want), ok)
		}
	}
}

func TestKeyListModel(t *testing.T) {
	seed := uint64(1)
	for range 200 {
		ops := make([]byte, 40)
		for i := range ops {
			seed = seed*6364136223846793005 + 1442695040888963407
			ops[i] = byte(seed >> 56)
		}
		checkKeyOps(t, ops)
	}
}

func FuzzKeyList(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 9, 0, 0, 3})
	f.Fuzz(checkKeyOps)
}
