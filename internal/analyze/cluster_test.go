package analyze

import (
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/hashfn"
)

// TestCluster checks that keys differing only in their last character spread
// under well-mixed hashes and cluster on a ketama ring under twemproxy's
// fnv1a_64 (the embedded default's old setting).
func TestCluster(t *testing.T) {
	nodes := []chash.Node{{Name: "embedded-1", Weight: 1}, {Name: "embedded-2", Weight: 1}, {Name: "embedded-3", Weight: 1}}
	for _, tt := range []struct {
		name      string
		scheme    chash.Scheme
		clustered bool
	}{
		{"chash", chash.Standard{}, false},
		{"ketama md5", compat.Ketama{KeyHash: hashfn.MD5}, false},
		{"ketama crc32a", compat.Ketama{KeyHash: hashfn.CRC32A}, false},
		{"ketama murmur", compat.Ketama{KeyHash: hashfn.Murmur}, false},
		{"ketama fnv1a_64", compat.Ketama{KeyHash: hashfn.FNV1a_64}, true},
		{"seed (the articles' FNV1_32 with a finaliser)", compat.Seed{Points: 5}, false},
	} {
		r, err := chash.New(tt.scheme, nodes)
		if err != nil {
			t.Fatal(err)
		}
		shares, err := Ring(r)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Cluster(RingOf(r), shares, 1000, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v", tt.name, *c)
		if c.Clustered() != tt.clustered || c.Groups != 1000 || c.GroupSize != 10 {
			t.Errorf("%s: %+v; want clustered %v", tt.name, *c, tt.clustered)
		}
	}
	// A one-node ring: every group together, as expected.
	r, _ := chash.New(nil, nodes[:1])
	shares, _ := Ring(r)
	if c, _ := Cluster(RingOf(r), shares, 100, nil); c.Together != 100 || c.Expected != 100 || c.Clustered() {
		t.Errorf("one node: %+v; want 100 together, 100 expected, not clustered", *c)
	}
}
