package chash

import (
	"bytes"
	"testing"
)

// FuzzLookup builds rings from arbitrary node lists and checks every lookup, replica
// set and merged update against the reference implementation.
func FuzzLookup(f *testing.F) {
	f.Add([]byte("a\x01b\x02c\x01"), []byte("key"), uint8(3), uint8(4))
	f.Add([]byte("\x00\x00"), []byte(""), uint8(0), uint8(1))
	f.Add([]byte("x\x05y\x05z\x05w\x01"), []byte("\xff\xfe"), uint8(1), uint8(9))
	f.Fuzz(func(t *testing.T, spec, key []byte, points, n uint8) {
		// spec is a list of name bytes each followed by a weight byte.
		var ns []Node
		for len(spec) >= 2 && len(ns) < 40 {
			i := bytes.IndexByte(spec[1:], spec[0]) // names end where their first byte repeats
			if i < 0 {
				break
			}
			name, w := string(spec[:i+1]), int(spec[i+1]%4)
			spec = spec[i+2:]
			ns = append(ns, Node{Name: name, Weight: w})
		}
		s := Standard{Points: int(points % 50)}
		r, err := New(s, ns)
		if err != nil {
			return // invalid names or weights: New must report, not panic
		}
		want := refLookup(s, ns, key)
		got, err := r.Lookup(key)
		if (err != nil) != (want == "") || got != want {
			t.Fatalf("Lookup(%q) = %q, %v; want %q", key, got, err, want)
		}
		if i, err := r.LookupIndex(key); err == nil && r.Nodes()[i].Name != want {
			t.Fatalf("LookupIndex(%q) = %d, node %q; want %q", key, i, r.Nodes()[i].Name, want)
		}
		reps, _ := r.AppendN(nil, key, int(n))
		idx, _ := r.AppendIndexN(nil, key, int(n))
		if len(idx) != len(reps) {
			t.Fatalf("AppendIndexN(%q) = %v; want as many as AppendN's %q", key, idx, reps)
		}
		for j, i := range idx {
			if r.Nodes()[i].Name != reps[j] {
				t.Fatalf("AppendIndexN(%q)[%d] = %d, node %q; want %q", key, j, i, r.Nodes()[i].Name, reps[j])
			}
		}
		if len(reps) > 0 && reps[0] != want {
			t.Fatalf("AppendN(%q)[0] = %q; want %q", key, reps[0], want)
		}
		seen := map[string]bool{}
		for _, x := range reps {
			if seen[x] {
				t.Fatalf("AppendN(%q) = %q repeats %q", key, reps, x)
			}
			seen[x] = true
		}
		if len(ns) > 1 {
			r2, err := r.Remove(ns[0].Name)
			if err != nil {
				t.Fatal(err)
			}
			r3, err := r2.Add(ns[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := sameRing(r3, r); err != nil {
				t.Fatalf("remove then add: %v", err)
			}
			if err := sameRing(r2, mustNew(t, s, ns[1:])); err != nil {
				t.Fatalf("remove: %v", err)
			}
			// Reuse the removed node's id for a heavier node with another name.
			r4, err := r2.Add(Node{Name: ns[0].Name + "'", Weight: 3})
			if err != nil {
				return // the new name may clash with another node's
			}
			if err := sameRing(r4, mustNew(t, s, r4.Nodes())); err != nil {
				t.Fatalf("remove then add another: %v", err)
			}
		}
	})
}
