package main

import (
	"reflect"
	"testing"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/proxy"
)

// TestEmbeddedDefaultConfig checks that the embedded default's pool, built in
// code, is the pool a nutcracker.yml with the same keys gives: twemproxy's
// defaults for every key it leaves out.
func TestEmbeddedDefaultConfig(t *testing.T) {
	f, stores, err := embeddedDefault()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	if err := proxy.Validate(f); err != nil {
		t.Fatalf("Validate(embedded default) = %v", err)
	}
	got := f.Pools[0]
	yaml := "embedded:\n  listen: 127.0.0.1:22121\n  distribution: chash\n  timeout: 400\n  servers:\n"
	for _, s := range got.Servers {
		yaml += "   - " + s.String() + "\n"
	}
	parsed, err := config.Parse("embedded.yml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	want := parsed.Pools[0]
	gv, wv := reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem()
	for i := range gv.NumField() {
		field := gv.Type().Field(i)
		if !field.IsExported() || field.Name == "Line" || field.Name == "Servers" {
			continue
		}
		if g, w := gv.Field(i).Interface(), wv.Field(i).Interface(); !reflect.DeepEqual(g, w) {
			t.Errorf("embedded default's %s = %v; the file gives %v", field.Name, g, w)
		}
	}
	for i, s := range got.Servers {
		w := want.Servers[i]
		if s.Host != w.Host || s.Port != w.Port || s.Weight != w.Weight || s.Alias != w.Alias {
			t.Errorf("server %d = %+v; the file gives %+v", i, s, w)
		}
	}
}
