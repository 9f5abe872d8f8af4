package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// Marshal writes f in the configuration format, so that Parse reads it back as
// the same File but for its Path and lines. It writes the pools in order and,
// for each, the keys whose value differs from NewPool's, in the order of Keys:
// a pool that sets only twemproxy's keys gives a file that nutcracker reads.
//
// It is an error, naming the pool and the key, if f has a pool that Parse
// would refuse (no servers, an unknown hash, ...) or a value that the format
// cannot hold, such as a timeout that is not a whole number of milliseconds.
func Marshal(f *File) ([]byte, error) {
	if len(f.Pools) == 0 {
		return nil, &Error{File: f.Path, Err: errors.New("no pools")}
	}
	def := NewPool("")
	root := &yaml.Node{Kind: yaml.MappingNode}
	for _, p := range f.Pools {
		m := &yaml.Node{Kind: yaml.MappingNode}
		for i := range settings {
			s := &settings[i]
			v := s.value(p)
			if reflect.DeepEqual(v, s.value(def)) {
				continue
			}
			n, err := node(v)
			if err != nil {
				return nil, &Error{File: f.Path, Pool: p.Name, Err: fmt.Errorf("%s: %w", s.Name, err)}
			}
			m.Content = append(m.Content, str(s.Name), n)
		}
		root.Content = append(root.Content, str(p.Name), m)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, &Error{File: f.Path, Err: err}
	}
	if err := enc.Close(); err != nil {
		return nil, &Error{File: f.Path, Err: err}
	}

	// Read it back, for Parse's checks and to find what the format lost.
	back, err := Parse(f.Path, b.Bytes())
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Line = 0 // a line of the text written here would mislead
		}
		return nil, err
	}
	for i, p := range f.Pools {
		q := back.Pools[i]
		if q.Name != p.Name {
			return nil, &Error{File: f.Path, Pool: p.Name, Err: fmt.Errorf("the name reads back as %q", q.Name)}
		}
		for _, s := range settings {
			if v, w := s.value(p), s.value(q); !reflect.DeepEqual(v, w) {
				return nil, &Error{File: f.Path, Pool: p.Name,
					Err: fmt.Errorf("%s: the file cannot hold %v: it reads back as %v", s.Name, v, w)}
			}
		}
	}
	return b.Bytes(), nil
}

// str returns a string's node; the encoder quotes it where YAML would read it
// as something else, such as "{}" or "true".
func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// node returns the node of a setting's value.
func node(v any) (*yaml.Node, error) {
	switch v := v.(type) {
	case string:
		return str(v), nil
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}, nil
	case time.Duration:
		if v < 0 || v%time.Millisecond != 0 {
			return nil, fmt.Errorf("%v is not a whole number of milliseconds", v)
		}
		return node(int(v / time.Millisecond))
	case []string:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, s := range v {
			n.Content = append(n.Content, str(s))
		}
		return n, nil
	}
	return nil, fmt.Errorf("no way to write a %T", v) // a mistake in settings
}
