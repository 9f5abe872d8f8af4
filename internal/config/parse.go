package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/chash-dev/chash/compat"
	"github.com/chash-dev/chash/hashfn"
)

// Parse parses data, the contents of the configuration file called name (which
// only errors use), and checks it as twemproxy does, and more: each pool has at
// least one server; no two servers of a pool have the same name; hash names are
// known to hashfn.Lookup; weights are positive and ports in 1..65535; no key is
// unknown or given twice. YAML aliases are errors, as in twemproxy. Distribution
// names and the settings only some distributions take (points, label) are
// checked by package dist, which builds the pools' routers.
//
// The error, if any, is an *Error naming the file, the line and the pool.
func Parse(name string, data []byte) (*File, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, &Error{File: name, Err: errors.New("no pools")}
		}
		return nil, yamlError(name, data, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == io.EOF:
	case err != nil:
		return nil, yamlError(name, data, err)
	default:
		return nil, &Error{File: name, Line: next.Line, Err: errors.New("a second YAML document; want one")}
	}
	return parseFile(name, &doc)
}

// yamlError turns an error of the YAML parser, "yaml: line 3: could not find
// expected ':'", into an *Error at the line where data goes wrong.
func yamlError(file string, data []byte, err error) error {
	line, msg := splitYAMLError(err)
	if l := problemLine(data, msg, line); l > 0 {
		line = l
	}
	return &Error{File: file, Line: line, Err: errors.New("invalid YAML: " + msg)}
}

// splitYAMLError splits an error of the YAML parser into its line, 0 if it
// names none, and its message.
func splitYAMLError(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if l, err := strconv.Atoi(n); err == nil {
				return l, after
			}
		}
	}
	return 0, msg
}

// maxProblemLines bounds the files whose problem line problemLine looks for:
// it parses a file some log2(lines) times (10,000 lines: about 14 times, a
// few tenths of a second).
const maxProblemLines = 10000

// problemLine returns the line of data at which the YAML parser's error msg,
// which it reported at line from, first arises, or 0 if it cannot tell. The
// parser names the line where the block it was in began, not the one that
// broke it: an item indented less than its list's, five lines on, is
// reported at the pool's first line. Parsing stops at the first error, so
// data's first n lines fail with msg from the problem line on and parse (or
// fail otherwise, cut short) before it: a binary search over n finds it.
func problemLine(data []byte, msg string, from int) int {
	lines := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		lines++
	}
	if lines > maxProblemLines || from < 0 || from > lines {
		return 0
	}
	ends := make([]int, 0, lines) // ends[i]: the end of line i+1, its newline included
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) < lines {
		ends = append(ends, len(data))
	}
	fails := func(n int) bool {
		dec := yaml.NewDecoder(bytes.NewReader(data[:ends[n-1]]))
		for {
			var doc yaml.Node
			err := dec.Decode(&doc)
			if err == io.EOF {
				return false
			}
			if err != nil {
				_, m := splitYAMLError(err)
				return m == msg
			}
		}
	}
	lo := max(from, 1)
	n := lo + sort.Search(len(ends)-lo+1, func(i int) bool { return fails(lo + i) })
	if n > len(ends) {
		return 0
	}
	return n
}

func parseFile(name string, doc *yaml.Node) (*File, error) {
	f := &File{Path: name}
	root := doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	if isNull(root) || root.Kind == yaml.MappingNode && len(root.Content) == 0 {
		return nil, &Error{File: name, Err: errors.New("no pools")}
	}
	if err := checkAlias(root); err != nil {
		return nil, &Error{File: name, Line: root.Line, Err: err}
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: name, Line: root.Line, Err: errors.New("want a mapping from pool names to pools")}
	}
	seen := make(map[string]*Pool)
	listens := make(map[string]*Pool)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if err := checkAlias(k); err != nil {
			return nil, &Error{File: name, Line: k.Line, Err: err}
		}
		if k.Kind != yaml.ScalarNode || isNull(k) || k.Value == "" {
			return nil, &Error{File: name, Line: k.Line, Err: errors.New("want a pool name")}
		}
		if q, dup := seen[k.Value]; dup {
			return nil, &Error{File: name, Line: k.Line, Pool: k.Value, Err: fmt.Errorf("pool defined twice (first on line %d)", q.Line)}
		}
		p := newPool(name, k.Value, k.Line)
		if err := p.parse(v); err != nil {
			return nil, &Error{File: name, Line: lineOf(err, p.Line), Pool: p.Name, Err: unwrapLine(err)}
		}
		if q, dup := listens[p.Listen]; dup && p.Listen != "" {
			return nil, &Error{File: name, Line: p.line("listen"), Pool: p.Name,
				Err: fmt.Errorf("listen %q is also pool %q's (line %d)", p.Listen, q.Name, q.line("listen"))}
		}
		seen[p.Name] = p
		listens[p.Listen] = p
		f.Pools = append(f.Pools, p)
	}
	return f, nil
}

// lineError is an error at a line of the pool being parsed.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return e.err.Error() }

func at(n *yaml.Node, err error) error { return &lineError{n.Line, err} }

func atf(n *yaml.Node, format string, args ...any) error {
	return &lineError{n.Line, fmt.Errorf(format, args...)}
}

func lineOf(err error, def int) int {
	if e, ok := err.(*lineError); ok {
		return e.line
	}
	return def
}

func unwrapLine(err error) error {
	if e, ok := err.(*lineError); ok {
		return e.err
	}
	return err
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func checkAlias(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode {
		return fmt.Errorf("alias *%s: YAML aliases are not supported (twemproxy rejects them)", n.Value)
	}
	return nil
}

// parse parses the pool's mapping v.
func (p *Pool) parse(v *yaml.Node) error {
	if err := checkAlias(v); err != nil {
		return at(v, err)
	}
	if v.Kind != yaml.MappingNode {
		return atf(v, "want a mapping of settings (listen, hash, distribution, servers, ...)")
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		if err := checkAlias(k); err != nil {
			return at(k, err)
		}
		if err := checkAlias(val); err != nil {
			return at(val, err)
		}
		if k.Kind != yaml.ScalarNode {
			return atf(k, "want a key such as hash or servers")
		}
		set := lookupSetting(k.Value)
		if set == nil {
			return atf(k, "unknown key %q (known: %s)", k.Value, settingNames())
		}
		if l, dup := p.lines[k.Value]; dup {
			return atf(k, "%s given twice (first on line %d)", k.Value, l)
		}
		p.lines[k.Value] = val.Line
		if err := set.parse(p, k.Value, val); err != nil {
			return err
		}
	}
	switch _, listed := p.lines["servers"]; {
	case p.ServersFrom != "" && listed:
		return &lineError{p.line("servers_from"), fmt.Errorf("servers_from and servers (line %d) both given; a pool takes its servers from one", p.line("servers"))}
	case p.ServersFrom == "" && len(p.Servers) == 0:
		return &lineError{p.line("servers"), errors.New("no servers (give servers: or servers_from:)")}
	}
	if p.RedisAuth != "" && !p.Redis {
		return &lineError{p.line("redis_auth"), errors.New("redis_auth is only valid in a pool with redis: true")}
	}
	if (p.TLSCertFile == "") != (p.TLSKeyFile == "") {
		given, missing := "tls_cert_file", "tls_key_file"
		if p.TLSCertFile == "" {
			given, missing = missing, given
		}
		return &lineError{p.line(given), fmt.Errorf("%s without %s; set both or neither", given, missing)}
	}
	if p.ReadMissFailover && p.Replicas < 2 {
		return &lineError{p.line("read_miss_failover"), errors.New("read_miss_failover: true needs replicas: 2 or more; with one replica there is nothing to fail over to")}
	}
	if err := p.checkDrain(); err != nil {
		return err
	}
	if p.EjectErrors != nil && *p.EjectErrors && !p.AutoEjectHosts {
		return &lineError{p.line("eject_errors"), errors.New("eject_errors: true needs auto_eject_hosts: true; without it no server is ejected")}
	}
	return nil
}

// scalar returns the text of the single value v.
func scalar(key string, v *yaml.Node) (string, error) {
	switch {
	case v.Kind != yaml.ScalarNode:
		return "", atf(v, "%s: want a single value, not a %s", key, kindName(v))
	case isNull(v):
		return "", atf(v, "%s has no value", key)
	}
	return v.Value, nil
}

func kindName(v *yaml.Node) string {
	switch v.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	}
	return "value"
}

// atoi parses a decimal number of at most MaxInt32 written with digits only, as
// twemproxy's nc_atoi accepts it.
func atoi(s string) (int, bool) {
	if s == "" || len(s) > 10 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= math.MaxInt32
}

// tooLarge reports whether s is written with digits only, as atoi wants,
// but is above MaxInt32.
func tooLarge(s string) bool {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return err != nil || n > math.MaxInt32 // err: digits past 2^64
}

func number(key string, v *yaml.Node) (int, error) {
	s, err := scalar(key, v)
	if err != nil {
		return 0, err
	}
	n, ok := atoi(s)
	if !ok {
		return 0, atf(v, "%s %q is not a number in 0..%d", key, s, math.MaxInt32)
	}
	return n, nil
}

// A parseFunc parses the value v of key into p. Its errors, made with at or
// atf, carry their line.
type parseFunc func(p *Pool, key string, v *yaml.Node) error

func intSetting(field func(*Pool) *int) parseFunc {
	return func(p *Pool, key string, v *yaml.Node) error {
		n, err := number(key, v)
		*field(p) = n
		return err
	}
}

func msSetting(field func(*Pool) *time.Duration) parseFunc {
	return func(p *Pool, key string, v *yaml.Node) error {
		n, err := number(key, v)
		*field(p) = time.Duration(n) * time.Millisecond
		return err
	}
}

func boolSetting(field func(*Pool) *bool) parseFunc {
	return func(p *Pool, key string, v *yaml.Node) error {
		s, err := scalar(key, v)
		if err != nil {
			return err
		}
		switch s {
		case "true":
			*field(p) = true
		case "false":
			*field(p) = false
		default:
			return atf(v, "%s %q is not true or false", key, s)
		}
		return nil
	}
}

// optional makes a setting of a field that is nil when its key is absent.
func optional[T any](kind func(func(*Pool) *T) parseFunc, field func(*Pool) **T) parseFunc {
	return func(p *Pool, key string, v *yaml.Node) error {
		*field(p) = new(T)
		return kind(func(p *Pool) *T { return *field(p) })(p, key, v)
	}
}

func fileSetting(field func(*Pool) *string) parseFunc {
	return func(p *Pool, key string, v *yaml.Node) error {
		s, err := scalar(key, v)
		if err != nil {
			return err
		}
		if s == "" {
			return atf(v, "%s is empty; want a file name", key)
		}
		*field(p) = s
		return nil
	}
}

// setServersFrom takes a servers_from URL. Its scheme is checked here, so
// that a typo fails as early as an unknown key; package membership parses
// the rest, where the proxy and the commands read the servers.
func setServersFrom(p *Pool, key string, v *yaml.Node) error {
	s, err := scalar(key, v)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(s, "etcd://") && !strings.HasPrefix(s, "file:") {
		return atf(v, "%s %q: want \"etcd://HOST:PORT/PREFIX/\" or \"file:PATH\"", key, s)
	}
	p.ServersFrom = s
	return nil
}

// positiveSetting makes a setting of a number that is at least 1; the error
// for 0 ends with hint.
func positiveSetting(field func(*Pool) *int, hint string) parseFunc {
	return func(p *Pool, key string, v *yaml.Node) error {
		n, err := number(key, v)
		if err != nil {
			return err
		}
		if n == 0 {
			return atf(v, "%s is 0; want at least 1%s", key, hint)
		}
		*field(p) = n
		return nil
	}
}

func setRedisAuth(p *Pool, key string, v *yaml.Node) error {
	s, err := scalar(key, v)
	p.RedisAuth = s
	return err
}

func setHash(p *Pool, key string, v *yaml.Node) error {
	s, err := scalar(key, v)
	if err != nil {
		return err
	}
	if _, err := hashfn.Lookup(s); err != nil {
		return atf(v, "%s %q is unknown (known: %s)", key, s, strings.Join(hashfn.Names(), ", "))
	}
	p.Hash = s
	return nil
}

func setHashTag(p *Pool, key string, v *yaml.Node) error {
	s, err := scalar(key, v)
	if err != nil {
		return err
	}
	// Two bytes, as twemproxy reads them: a character outside ASCII takes
	// two bytes or more of UTF-8 by itself.
	if len(s) != 2 {
		return atf(v, "%s %q is not two ASCII characters, like \"{}\"", key, s)
	}
	p.HashTag = s
	return nil
}

func setDistribution(p *Pool, key string, v *yaml.Node) error {
	s, err := scalar(key, v)
	if err != nil {
		return err
	}
	if s == "" {
		return atf(v, "%s is empty; leave it out for the default, %s", key, DefaultDistribution)
	}
	p.Distribution = s
	return nil
}

// setLabel takes the seed distribution's label template, which package dist
// checks against the rest of the pool.
func setLabel(p *Pool, key string, v *yaml.Node) error {
	if v.Kind == yaml.MappingNode {
		return atf(v, "%s: a mapping; quote the template, as in %s: \"{name}#{i}\"", key, key)
	}
	s, err := scalar(key, v)
	if err != nil {
		return err
	}
	if s == "" {
		return atf(v, "%s is empty; leave it out for the default, %q", key, compat.DefaultSeedLabel)
	}
	p.Label = s
	return nil
}

// setListen parses "host:port" or "/path/to/socket [mode]" as twemproxy's
// conf_set_listen does, without resolving the host.
func setListen(p *Pool, key string, v *yaml.Node) error {
	s, err := scalar(key, v)
	if err != nil {
		return err
	}
	if strings.HasPrefix(s, "/") {
		path, mode, ok := cutLast(s, ' ')
		if ok {
			m, err := strconv.ParseUint(mode, 8, 32)
			if err != nil || m > 0o777 {
				return atf(v, "%s %q: mode %q is not octal in 0..0777", key, s, mode)
			}
			p.ListenPerm = fs.FileMode(m)
		}
		p.Listen = path
		return nil
	}
	_, port, ok := cutLast(s, ':')
	if !ok {
		return atf(v, "%s %q: want \"host:port\" or \"/path/to/socket [mode]\"", key, s)
	}
	if err := checkPort(port); err != nil {
		return atf(v, "%s %q: %v", key, s, err)
	}
	p.Listen = s
	return nil
}

func setServers(p *Pool, key string, v *yaml.Node) error {
	if v.Kind != yaml.SequenceNode {
		if isNull(v) {
			return atf(v, "no servers")
		}
		return atf(v, "%s: want a list of \"host:port:weight [name]\" lines", key)
	}
	names := make(map[string]int, len(v.Content))
	for _, item := range v.Content {
		if err := checkAlias(item); err != nil {
			return at(item, err)
		}
		if item.Kind != yaml.ScalarNode || isNull(item) {
			return atf(item, "server: want a \"host:port:weight [name]\" line, not a %s", kindName(item))
		}
		s, err := ParseServer(item.Value)
		if err != nil {
			return atf(item, "server %q: %v", item.Value, err)
		}
		s.Line = item.Line
		name := s.Name()
		if l, dup := names[name]; dup {
			return atf(item, "server %q: name %q is also the server's on line %d", item.Value, name, l)
		}
		names[name] = s.Line
		p.Servers = append(p.Servers, s)
	}
	return nil
}

// setDrain reads the names of the servers to drain: a list, or one name.
func setDrain(p *Pool, key string, v *yaml.Node) error {
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	for _, item := range items {
		if err := checkAlias(item); err != nil {
			return at(item, err)
		}
		s, err := scalar(key, item)
		if err != nil {
			return err
		}
		if slices.Contains(p.Drain, s) {
			return atf(item, "%s: server %q named twice", key, s)
		}
		p.Drain = append(p.Drain, s)
	}
	return nil
}

// checkDrain checks that the servers drain names are the pool's, and that
// one at least is not drained.
func (p *Pool) checkDrain() error {
	if len(p.Drain) == 0 {
		return nil
	}
	if p.ServersFrom != "" {
		// The servers are known only when the proxy reads them.
		return &lineError{p.line("drain"), errors.New("drain names servers of a servers list; a servers_from pool's server is drained with chash proxy's POST /drain, or leaves its source")}
	}
	names := make([]string, len(p.Servers))
	for i, s := range p.Servers {
		names[i] = s.Name()
	}
	for _, d := range p.Drain {
		if !slices.Contains(names, d) {
			return &lineError{p.line("drain"), fmt.Errorf("drain: %q is not the name of a server of the pool (servers: %s)", d, strings.Join(names, ", "))}
		}
	}
	if len(p.Drain) == len(p.Servers) {
		return &lineError{p.line("drain"), errors.New("drain names every server; at least one must own the keys")}
	}
	return nil
}

// ParseServer parses a line of a pool's servers list, "host:port:weight
// [alias]" or "/path/to/socket:weight [alias]", from the end as twemproxy's
// conf_add_server does: the last space starts the alias, the last ':' before it
// the weight, and the ':' before that the port. The Server's Line is zero. The
// error says what is wrong, without the line, which callers quote.
func ParseServer(line string) (Server, error) {
	var s Server
	rest := line
	if r, alias, ok := cutLast(rest, ' '); ok {
		if alias == "" {
			return s, errors.New("empty name after the space")
		}
		rest, s.Alias = r, alias
	}
	const format = `want "host:port:weight [name]" or "/path/to/socket:weight [name]"`
	addr, weight, ok := cutLast(rest, ':')
	if !ok {
		return s, errors.New(format)
	}
	w, ok := atoi(weight)
	if !ok || w == 0 {
		if tooLarge(weight) {
			return s, fmt.Errorf("weight %s is above the maximum, %d", weight, math.MaxInt32)
		}
		if strings.Contains(weight, " ") {
			// The name is what follows the last space, as twemproxy reads it.
			return s, fmt.Errorf("weight %q is not a positive integer (a name has no spaces)", weight)
		}
		return s, fmt.Errorf("weight %q is not a positive integer", weight)
	}
	s.Weight = w
	if strings.HasPrefix(addr, "/") {
		if strings.Contains(addr, ":") {
			return s, errors.New(format) // twemproxy too rejects a ':' in a socket path
		}
		s.Host = addr
		return s, nil
	}
	host, port, ok := cutLast(addr, ':')
	if !ok {
		return s, errors.New(format)
	}
	if host == "" {
		return s, errors.New("empty host")
	}
	// A host name has no spaces or control bytes; "- 10.0.0.1", a YAML list
	// item pasted into a file of server lines, would otherwise read as one.
	if i := strings.IndexFunc(host, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
		return s, fmt.Errorf("host %q contains %q", host, host[i])
	}
	if err := checkPort(port); err != nil {
		return s, err
	}
	s.Host = host
	s.Port, _ = atoi(port)
	return s, nil
}

// checkPort accepts a port 1..65535 written without leading zeros, so that
// Server.Name gives back the text of the file, which some distributions hash.
func checkPort(port string) error {
	n, ok := atoi(port)
	switch {
	case !ok || n < 1 || n > 65535:
		return fmt.Errorf("port %q is not a number in 1..65535", port)
	case port[0] == '0':
		return fmt.Errorf("port %q has a leading zero", port)
	}
	return nil
}

// cutLast slices s around the last instance of sep.
func cutLast(s string, sep byte) (before, after string, found bool) {
	if i := strings.LastIndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}
