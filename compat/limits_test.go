package compat_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/chash-dev/chash"
	"github.com/chash-dev/chash/compat"
)

// TestLimits: the zero Modula has no node (chash.ErrEmpty, not a division by
// zero), and nginx's 160 points per unit of weight over MaxPoints is an error.
func TestLimits(t *testing.T) {
	var m compat.Modula
	if _, err := m.LookupString("k"); !errors.Is(err, chash.ErrEmpty) {
		t.Errorf("zero Modula: %v; want chash.ErrEmpty", err)
	}
	for _, w := range []int{1 << 20, math.MaxInt} {
		if _, err := chash.New(compat.Nginx{}, []chash.Node{{Name: "10.0.0.1:80", Weight: w}}); err == nil {
			t.Errorf("nginx ring of weight %d: no error", w)
		}
	}
}

// TestWeightSum: weights whose sum is past math.MaxInt are an error naming the
// node, from New, Add and Reweight, not a ketama ring whose normalised points
// all came out as none, so that every lookup said chash.ErrEmpty.
func TestWeightSum(t *testing.T) {
	big := []chash.Node{{Name: "a", Weight: 1 << 62}, {Name: "b", Weight: 1 << 62}}
	for _, s := range []chash.Scheme{compat.Ketama{}, compat.Libketama{}, compat.Libmemcached{Weighted: true}} {
		if r, err := chash.New(s, big); err == nil || !strings.Contains(err.Error(), `node "b"`) {
			t.Errorf("%T: New of weights summing past MaxInt: %d points, error %v; want an error naming node \"b\"", s, r.NumPoints(), err)
		}
		r, err := chash.New(s, big[:1])
		if err != nil {
			t.Fatalf("%T: New of one node of weight 2^62: %v", s, err)
		}
		if r.NumPoints() != compat.KetamaPointsPerServer {
			t.Errorf("%T: one node of weight 2^62: %d points; want %d", s, r.NumPoints(), compat.KetamaPointsPerServer)
		}
		if _, err := r.Add(big[1]); err == nil {
			t.Errorf("%T: Add taking the weights past MaxInt: no error", s)
		}
		r, err = chash.New(s, []chash.Node{big[0], {Name: "b", Weight: 1}})
		if err != nil {
			t.Fatalf("%T: %v", s, err)
		}
		if _, err := r.Reweight(big[1]); err == nil {
			t.Errorf("%T: Reweight taking the weights past MaxInt: no error", s)
		}
	}
}

// TestModulaSlots: weights that would give twemproxy's modula table more than
// chash.MaxPoints slots, one per unit of weight, are an error naming the node,
// not a table built slot by slot until memory runs out.
func TestModulaSlots(t *testing.T) {
	for _, ns := range [][]chash.Node{
		{{Name: "a", Weight: 1 << 40}},
		{{Name: "a", Weight: math.MaxInt}},
		{{Name: "a", Weight: chash.MaxPoints}, {Name: "bb", Weight: 1}},
	} {
		last := ns[len(ns)-1].Name
		if _, err := compat.NewModula(ns, nil, ""); err == nil || !strings.Contains(err.Error(), `"`+last+`"`) {
			t.Errorf("NewModula(weights %d, ...) error %v; want one naming %q", ns[0].Weight, err, last)
		}
	}
	m, err := compat.NewModula([]chash.Node{{Name: "a", Weight: chash.MaxPoints - 1}, {Name: "bb", Weight: 1}}, nil, "")
	if err != nil {
		t.Fatalf("NewModula of exactly MaxPoints slots: %v", err)
	}
	if _, err := m.LookupString("k"); err != nil {
		t.Error(err)
	}
}

// TestValidate: a negative count of points is an error naming the setting,
// from chash.New, where it was read as the default (groupcache's 50
// replicas, stathat's 20, the seed's one point a server).
func TestValidate(t *testing.T) {
	nodes := []chash.Node{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}}
	for _, tc := range []struct {
		s    chash.Scheme
		want string
	}{
		{compat.Groupcache{Replicas: -1}, "Groupcache.Replicas -1 is negative"},
		{compat.Stathat{Replicas: -5}, "Stathat.Replicas -5 is negative"},
		{compat.Seed{Points: -2}, "Seed.Points -2 is negative"},
	} {
		if _, err := chash.New(tc.s, nodes); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%T%+v): %v; want an error saying %q", tc.s, tc.s, err, tc.want)
		}
	}
	for _, s := range []chash.Scheme{compat.Groupcache{}, compat.Stathat{}, compat.Seed{}, compat.Groupcache{Replicas: 3}} {
		if _, err := chash.New(s, nodes); err != nil {
			t.Errorf("New(%T%+v): %v", s, s, err)
		}
	}
}
