// Package config reads twemproxy's configuration format (nutcracker.yml): a YAML
// mapping from pool names to pools, each with a listen address, a key hash, a
// distribution and a list of servers.
//
//	alpha:
//	  listen: 127.0.0.1:22121
//	  hash: fnv1a_64
//	  hash_tag: "{}"
//	  distribution: ketama
//	  timeout: 400
//	  servers:
//	   - 127.0.0.1:11211:1
//	   - 127.0.0.1:11212:1 server2
//
// Every key twemproxy 0.5.0 accepts is parsed into a typed field of Pool and checked
// as twemproxy checks it; unknown keys are errors. chash adds distributions,
// "chash" (chash's own ring) and "seed" (the seed articles' Java ring) among them,
// the key "points", the number of ring points per unit of weight for those that
// take it, and the key "label", the string the seed distribution hashes for each
// point ("{name}&&VN{i}" by default; quote it in YAML). Parse checks what YAML
// alone can tell; the catalogue of distributions, package dist, checks a pool
// against its distribution (whether it takes points and label, its hash) when it
// builds the pool's router, and reports problems with Pool.ErrorAt.
//
// chash also adds keys for chash proxy that set, for one pool, what its flags set
// for all: "eject_errors" (--eject-errors), "client_idle_timeout" in milliseconds
// (--idle-timeout) and "tls_cert_file" with "tls_key_file" (--tls-cert, --tls-key).
// A pool that leaves one out gets the flag's value. And keys for resizing
// without a cold cache: "warmup" (a window, in milliseconds, after a ring
// change, in which misses at a key's new server read its previous server),
// "replicas" (the number of servers each key is stored on),
// "read_miss_failover" and "drain" (servers that own no keys but stay
// connected, to hand their keys over).
//
// Every error names the file, the line and the pool, as in
//
//	config: nutcracker.yml:7: pool "alpha": server "10.0.0.1:11211:x": weight "x" is not a positive integer
//
// A pool's servers may live elsewhere: "servers_from" (a chash addition)
// names the keys under an etcd prefix or a file of server lines, which package
// membership reads, instead of a servers list.
//
// A configuration can also be built in code: NewPool makes a pool with
// twemproxy's defaults, and Marshal writes a File so that Parse reads it back.
// Keys documents every key of a pool, its default and an example: the
// reference that "chash help config" prints.
//
// This is the only package of chash that imports a YAML library.
package config

import (
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/chash-dev/chash/compat"
)

// Defaults of twemproxy (nc_conf.h) for keys a pool leaves out.
const (
	// DefaultHash is the key hash of the distributions twemproxy knows (ketama,
	// modula, random) when a pool has no "hash" key.
	DefaultHash = "fnv1a_64"
	// DefaultDistribution is the distribution of a pool with no "distribution" key.
	DefaultDistribution = "ketama"
)

// File is a parsed configuration file.
type File struct {
	// Path is the file's name as given to Load or Parse; errors quote it.
	Path string
	// Pools are the file's pools in file order.
	Pools []*Pool
}

// Pool returns the pool called name. An empty name selects the file's only pool;
// it is an error if the file has several. Errors list the pools' names.
func (f *File) Pool(name string) (*Pool, error) {
	names := make([]string, len(f.Pools))
	for i, p := range f.Pools {
		if p.Name == name || name == "" && len(f.Pools) == 1 {
			return p, nil
		}
		names[i] = strconv.Quote(p.Name)
	}
	if name == "" {
		return nil, &Error{File: f.Path, Err: fmt.Errorf("%d pools (%s): name one", len(f.Pools), strings.Join(names, ", "))}
	}
	return nil, &Error{File: f.Path, Err: fmt.Errorf("no pool %q (pools: %s)", name, strings.Join(names, ", "))}
}

// Pool is one pool of a configuration file. Parse sets every field, filling in
// twemproxy's default where the file leaves a key out; each field's doc gives that
// default. Durations are written in the file as whole milliseconds.
type Pool struct {
	// Name is the pool's name, the key of its mapping in the file.
	Name string
	// Line is the line of the pool's name in the file.
	Line int

	// Listen is the address the proxy accepts clients on, "host:port" or the path
	// of a Unix socket, as written ("listen:"). Empty when absent: twemproxy
	// requires it, chash route does not use it.
	Listen string
	// ListenPerm is the mode of the Unix socket, given after its path ("listen:
	// /tmp/gamma 0666"). Zero when not given: the socket keeps the mode it was
	// created with.
	ListenPerm fs.FileMode
	// Hash is the name of the function that hashes keys ("hash:"), one that
	// hashfn.Lookup knows. Empty when absent: then the distribution's default
	// applies, DefaultHash (fnv1a_64) for twemproxy's ketama, modula and random,
	// xxh64 for chash, java_fnv1_32 for seed.
	Hash string
	// HashTag is two ASCII characters (bytes) that delimit the part of a key
	// that is hashed ("hash_tag:"; see HashKey). Empty when absent: the whole
	// key is hashed.
	HashTag string
	// Distribution is the name of the way keys are spread over servers
	// ("distribution:"), one of package dist's catalogue, which Parse does not
	// check. Default: DefaultDistribution (ketama).
	Distribution string
	// Points is the number of ring points per unit of weight ("points:", a chash
	// addition), for the distributions that take it. Zero when absent, which
	// means the distribution's default: 160 for chash, one point per server
	// whatever its weight (the articles' ring without virtual nodes) for seed.
	Points int
	// Label is the string the seed distribution hashes for each of a server's
	// points ("label:", a chash addition), with {name} standing for the server's
	// name and {i} for the point's number: "{i}:{name}" gives "0:10.0.0.1:11211",
	// "1:10.0.0.1:11211", .... Empty when absent, which means "{name}&&VN{i}"
	// (compat.DefaultSeedLabel). Only the seed distribution takes it, and only
	// with points above zero.
	Label string

	// Timeout is how long the proxy waits to connect to a server or for its
	// response ("timeout:"). Zero when absent, which means no limit.
	Timeout time.Duration
	// Backlog is the length of the listen queue ("backlog:"). Default: 512.
	Backlog int
	// ClientConnections is the most client connections the proxy accepts
	// ("client_connections:"); zero, the default, means no limit. twemproxy 0.5.0
	// parses the key but always uses zero.
	ClientConnections int
	// Redis says the pool speaks the Redis protocol rather than memcached's
	// ("redis:"). Default: false.
	Redis bool
	// RedisAuth is the password the proxy sends to each Redis server with AUTH
	// ("redis_auth:"); only a Redis pool may set it. Empty when absent: no AUTH.
	RedisAuth string
	// RedisDB is the database the proxy selects on each Redis server
	// ("redis_db:"). Default: 0.
	RedisDB int
	// Preconnect says the proxy connects to every server at start
	// ("preconnect:"). Default: false.
	Preconnect bool
	// ServerConnections is the most connections the proxy opens to each server
	// ("server_connections:"); it is at least 1. Default: 1.
	ServerConnections int
	// AutoEjectHosts says a server that fails ServerFailureLimit times in a row
	// leaves the distribution until ServerRetryTimeout passes
	// ("auto_eject_hosts:"). Default: false.
	AutoEjectHosts bool
	// ServerRetryTimeout is how long an ejected server stays out
	// ("server_retry_timeout:"). Default: 30s.
	ServerRetryTimeout time.Duration
	// ServerFailureLimit is the number of consecutive failures that ejects a
	// server ("server_failure_limit:"). Default: 2.
	ServerFailureLimit int
	// TCPKeepalive says the proxy enables TCP keepalive on its server connections
	// ("tcpkeepalive:"). Default: false.
	TCPKeepalive bool

	// EjectErrors says the keys of an ejected server answer "SERVER_ERROR server
	// ejected" instead of moving to other servers ("eject_errors:", a chash
	// addition), for users who prefer misses to stale data. It may be true only
	// with auto_eject_hosts: true. Nil when absent: the proxy's default applies
	// (chash proxy --eject-errors, else false).
	EjectErrors *bool
	// ClientIdleTimeout is how long the proxy keeps a client connection that sends
	// nothing ("client_idle_timeout:", a chash addition); zero keeps idle clients,
	// as twemproxy does. Nil when absent: the proxy's default applies (chash
	// proxy --idle-timeout, else no limit).
	ClientIdleTimeout *time.Duration
	// TLSCertFile and TLSKeyFile are the PEM files of the certificate, with its
	// chain, and of its key, with which the pool's listener serves clients over
	// TLS ("tls_cert_file:", "tls_key_file:", chash additions). A pool sets both
	// or neither; relative paths are relative to the proxy's working directory.
	// Parse does not read the files; the proxy does, when it validates the file.
	// Empty when absent: the proxy's default applies (chash proxy --tls-cert and
	// --tls-key, else no TLS).
	TLSCertFile string
	TLSKeyFile  string

	// Warmup is how long a warm-up window stays open after the pool's ring
	// changes (a reload, UpdateServers, an ejection, a readmission, a drain),
	// as "warmup:" gives it in milliseconds, a chash addition: while it is
	// open, a retrieval that misses at a key's new server, for a key whose
	// server changed, reads the key's previous server, answers with its value
	// and copies it to the new server. Zero when absent: no warm-up, misses
	// are misses.
	Warmup time.Duration
	// Replicas is the number of distinct servers each key is stored on
	// ("replicas:", a chash addition): writes go to all of them, reads to the
	// first that is up. Only distributions with replica sets take more than
	// one. Default: 1, every key on one server.
	Replicas int
	// ReadMissFailover says a read that misses at a key's first replica tries
	// the next ("read_miss_failover:", a chash addition); it needs replicas
	// above 1. Default: false, reads fail over only when a replica fails.
	ReadMissFailover bool
	// Drain names servers of the pool that own no keys but stay connected
	// ("drain:", a chash addition), so that a server leaving the pool can hand
	// its keys over: with warmup, the keys read while the window is open are
	// copied from it to their new servers. Each name is a server's Name.
	// Empty when absent: every server owns keys.
	Drain []string

	// Servers are the pool's servers in file order ("servers:"). Parse accepts
	// no two servers with the same Name, and no pool without servers unless it
	// sets ServersFrom instead.
	Servers []Server
	// ServersFrom names where the pool's servers live, instead of Servers
	// ("servers_from:", a chash addition): the keys under an etcd prefix,
	// "etcd://HOST:PORT[,HOST:PORT...]/PREFIX/", or a file of server lines,
	// "file:PATH". A pool sets servers or servers_from, never both. Parse
	// checks that the value names one of the two schemes; package membership
	// parses the rest of it and reads the servers, which the proxy follows as
	// they change and chash route reads once. Empty when absent: the servers
	// are Servers.
	ServersFrom string

	file  string         // the Path of the pool's File, for errors
	lines map[string]int // the line of each key's value
}

// newPool returns a pool as Parse starts it, before its keys are read.
func newPool(file, name string, line int) *Pool {
	p := NewPool(name)
	p.file, p.Line, p.lines = file, line, make(map[string]int)
	return p
}

// HashKey returns the part of key that the pool hashes: with a HashTag such as
// "{}", the bytes between the first '{' and the first '}' after it, if both are
// there and enclose at least one byte; otherwise, or without a HashTag, the whole
// key. So "{user1}:name" and "{user1}:mail" land on the same server, while "{}x"
// is hashed whole. This is twemproxy's rule (nc_server.c), which
// compat.HashTagged keeps. The result shares key's memory.
func (p *Pool) HashKey(key []byte) []byte { return compat.HashTagged(key, p.HashTag) }

// KeyLine returns the line of key's value in the file, or the pool's Line if the
// pool does not set key, for errors about a setting found after Parse.
func (p *Pool) KeyLine(key string) int { return p.line(key) }

// ErrorAt returns an *Error about the pool at the line of key's value (the
// pool's line if the pool does not set key), for problems found after Parse,
// such as a setting its distribution does not take.
func (p *Pool) ErrorAt(key string, err error) error {
	return &Error{File: p.file, Line: p.line(key), Pool: p.Name, Err: err}
}

// Has reports whether the pool's block in the file sets key.
func (p *Pool) Has(key string) bool {
	_, ok := p.lines[key]
	return ok
}

// line returns the line of key's value in the pool, or the pool's line if the
// pool does not set key.
func (p *Pool) line(key string) int {
	if l, ok := p.lines[key]; ok {
		return l
	}
	return p.Line
}

// Server is one line of a pool's "servers:" list.
type Server struct {
	// Host is the server's host name or address as written, or the path of its
	// Unix socket.
	Host string
	// Port is the server's TCP port, 1 to 65535; zero for a Unix socket.
	Port int
	// Weight is the server's weight, at least 1.
	Weight int
	// Alias is the server's name as given after the address, or empty.
	Alias string
	// Line is the line of the server in the file.
	Line int
}

// Name returns the server's name: its Alias if it has one, else "host:port" as
// written (the socket's path for a Unix socket). Routers return it, and the chash
// and seed distributions hash it to place the server's points.
func (s Server) Name() string {
	if s.Alias != "" {
		return s.Alias
	}
	if s.Port == 0 {
		return s.Host
	}
	return s.Host + ":" + strconv.Itoa(s.Port)
}

// String returns the server's line in a servers list, as ParseServer reads it:
// "host:port:weight", or "/path/to/socket:weight" for a Unix socket, followed
// by " alias" if the server has one.
func (s Server) String() string {
	line := s.Host
	if s.Port != 0 {
		line += ":" + strconv.Itoa(s.Port)
	}
	line += ":" + strconv.Itoa(s.Weight)
	if s.Alias != "" {
		line += " " + s.Alias
	}
	return line
}

// Error is an error in a configuration file.
type Error struct {
	// File is the file's name as given to Load or Parse.
	File string
	// Line is the line the error concerns, or zero if it concerns none.
	Line int
	// Pool is the name of the pool the error concerns, or empty.
	Pool string
	// Err says what is wrong.
	Err error
}

// Error returns the message "config: FILE:LINE: pool "NAME": ERR", leaving out the
// parts that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Pool != "" {
		fmt.Fprintf(&b, "pool %q: ", e.Pool)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns e.Err.
func (e *Error) Unwrap() error { return e.Err }

// Load reads and parses the configuration file at path; see Parse.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data)
}
