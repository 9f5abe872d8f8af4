package membership

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/chash-dev/chash/internal/config"
)

// keyList is the servers under an etcd prefix: each key's value parsed, the
// keys in byte order, which is the order of the servers in the list. It
// counts bad values and shared names as keys change, so that checking a
// change costs no pass over the list.
type keyList struct {
	entries []entry
	names   map[string]int // valid entries by server name
	bad     int            // entries whose value is not a server line
	shared  int            // valid entries whose name an earlier-counted one has
}

// An entry is one key and its value.
type entry struct {
	key    string
	server config.Server
	err    error // why the value is not a server line, or nil
}

func newKeyList() *keyList {
	return &keyList{names: make(map[string]int)}
}

// put sets key's value.
func (l *keyList) put(key string, value []byte) {
	i, found := slices.BinarySearchFunc(l.entries, key, func(e entry, k string) int { return cmp.Compare(e.key, k) })
	if found {
		l.forget(&l.entries[i])
	} else {
		l.entries = slices.Insert(l.entries, i, entry{key: key})
	}
	e := &l.entries[i]
	e.server, e.err = parseLine(strings.TrimSpace(string(value)))
	l.count(e)
}

// del removes key.
func (l *keyList) del(key string) {
	i, found := slices.BinarySearchFunc(l.entries, key, func(e entry, k string) int { return cmp.Compare(e.key, k) })
	if !found {
		return
	}
	l.forget(&l.entries[i])
	l.entries = slices.Delete(l.entries, i, i+1)
}

func (l *keyList) count(e *entry) {
	if e.err != nil {
		l.bad++
		return
	}
	name := e.server.Name()
	if l.names[name] > 0 {
		l.shared++
	}
	l.names[name]++
}

func (l *keyList) forget(e *entry) {
	if e.err != nil {
		l.bad--
		return
	}
	name := e.server.Name()
	l.names[name]--
	switch {
	case l.names[name] > 0:
		l.shared--
	default:
		delete(l.names, name)
	}
}

// servers returns a new slice of the servers in key order, or an error naming
// the first key whose value is not a server line, or the first two keys that
// hold servers of the same name. source names the prefix for errors.
func (l *keyList) servers(source string) ([]config.Server, error) {
	if l.bad > 0 {
		for _, e := range l.entries {
			if e.err != nil {
				return nil, fmt.Errorf("membership: %s: key %q: %w", source, e.key, e.err)
			}
		}
	}
	if l.shared > 0 {
		first := make(map[string]string, len(l.entries))
		for _, e := range l.entries {
			name := e.server.Name()
			if k, dup := first[name]; dup {
				return nil, fmt.Errorf("membership: %s: key %q: server name %q is also key %q's", source, e.key, name, k)
			}
			first[name] = e.key
		}
	}
	s := make([]config.Server, len(l.entries))
	for i, e := range l.entries {
		s[i] = e.server
	}
	return s, nil
}
