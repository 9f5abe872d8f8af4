package main

import (
	"fmt"
	"strings"

	"github.com/chash-dev/chash/internal/config"
	"github.com/chash-dev/chash/internal/dist"
)

func init() { register(newConfigTopic) }

// newConfigTopic is the help topic "chash help config": the reference of a
// pool's keys, made from config.Keys, so that a key added to the config
// package shows up here with its documentation.
func newConfigTopic() *Command {
	var b strings.Builder
	b.WriteString(`The configuration file of route, analyze, diff and proxy (--config FILE) is
twemproxy's nutcracker.yml: a YAML mapping from pool names to pools, each a
mapping of the keys below. chash reads every key that twemproxy 0.5.0 reads,
as twemproxy reads it, and adds keys of its own, marked "chash" below, which
nutcracker rejects. A key left out takes its default; an unknown key, a key
given twice or a bad value is an error naming the file, the line and the pool.

	cache:
	  listen: 127.0.0.1:22121
	  hash: md5
	  hash_tag: "{}"
	  distribution: ketama
	  timeout: 400
	  auto_eject_hosts: true
	  servers:
	   - 10.0.0.1:11211:1
	   - 10.0.0.2:11211:1
	   - 10.0.0.3:11211:2 big

Durations are whole milliseconds.

The keys of a pool:
`)
	for _, k := range configKeys() {
		fmt.Fprintf(&b, "\n%s (%s)\n", k.Name, k.Origin)
		wrap(&b, k.Doc, "\t")
		wrap(&b, "Default: "+k.Default+".", "\t")
		if len(k.Values) > 0 {
			wrap(&b, "Values: "+strings.Join(k.Values, ", ")+".", "\t")
		}
		b.WriteString("\tExample:\n")
		for line := range strings.Lines(k.Example) {
			b.WriteString("\t\t" + line)
		}
		b.WriteString("\n")
	}
	return &Command{
		UsageLine: "config",
		Short:     "the keys of a configuration file's pools, with defaults and examples",
		Long:      b.String(),
	}
}

// configKeys returns config.Keys with the values of "distribution" filled in
// from the catalogue of package dist, which config cannot import.
func configKeys() []config.Key {
	keys := config.Keys()
	for i := range keys {
		if keys[i].Name == "distribution" {
			keys[i].Values = dist.Names()
		}
	}
	return keys
}

// wrap writes text as lines of at most 80 columns (a tab counting 8), each
// starting with prefix.
func wrap(b *strings.Builder, text, prefix string) {
	width := 80 - len(strings.ReplaceAll(prefix, "\t", "        "))
	n := 0
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
			b.WriteString(prefix)
		case n+1+len(w) > width:
			b.WriteString("\n" + prefix)
			n = 0
		default:
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	b.WriteString("\n")
}
