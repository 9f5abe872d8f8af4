package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chash-dev/chash/hashfn"
)

// A Key documents one key of a pool, as the configuration reference (chash
// help config) shows it.
type Key struct {
	// Name is the key as written in a pool's mapping, such as "hash_tag".
	Name string
	// Origin is "twemproxy" for a key of twemproxy 0.5.0, which chash reads as
	// twemproxy does, or "chash" for a key chash adds, which nutcracker rejects.
	Origin string
	// Default is what a pool that leaves the key out gets, in words.
	Default string
	// Doc says what the key does, in sentences.
	Doc string
	// Example is the key set in YAML, as a line of a pool's mapping, such as
	// `hash_tag: "{}"`.
	Example string
	// Values are the names the value may take, for a key whose value is one of
	// a list of names (hash, distribution); nil for the others.
	Values []string
}

// A setting is a key of a pool: its documentation, how Parse reads its value
// and how Marshal writes it.
type setting struct {
	Key
	// parse parses the key's value into a pool.
	parse parseFunc
	// value returns p's value of the key, as Marshal writes it: a string, an
	// int, a bool, a time.Duration (written in milliseconds), a []string (a
	// list), or nil when the pool leaves the key out. Marshal leaves out a key
	// whose value is NewPool's.
	value func(p *Pool) any
	// values returns Key.Values, for keys that take a name.
	values func() []string
}

// settings are the keys of a pool, twemproxy's (nc_conf.c, conf_commands) and
// chash's, in the order a file usually gives them, servers last: the one table
// that Parse reads with, Marshal writes with and Keys documents. A field added
// to Pool needs an entry here.
var settings = []setting{
	{
		Key: Key{
			Name: "listen", Origin: "twemproxy",
			Default: "none: the proxy requires it; chash route and analyze do not use it",
			Doc: "The address the proxy accepts the pool's clients on: host:port, or the path of a " +
				"Unix socket optionally followed by the socket's mode in octal. No two pools may " +
				"listen on the same address. 0.0.0.0 is every IPv4 address and [::] every address, " +
				"IPv6 and IPv4, as for nutcracker. The proxy compares the addresses it listens on: " +
				"localhost:22121 is 127.0.0.1:22121, and 0.0.0.0:22121 takes 127.0.0.1:22121's " +
				"clients, so two such pools, or a pool on the admin listener's or stats port's " +
				"address, are refused (the kernel would spread their clients over both).",
			Example: "listen: 127.0.0.1:22121",
		},
		parse: setListen,
		value: func(p *Pool) any {
			if p.ListenPerm != 0 || strings.HasPrefix(p.Listen, "/") && strings.Contains(p.Listen, " ") {
				// A path with a space needs the mode after it, or its last
				// word would be read as the mode.
				return fmt.Sprintf("%s %04o", p.Listen, p.ListenPerm)
			}
			return p.Listen
		},
	},
	{
		Key: Key{
			Name: "hash", Origin: "twemproxy",
			Default: "the distribution's own: fnv1a_64 for twemproxy's ketama, modula and random, " +
				"xxh64 for chash, java_fnv1_32 for seed",
			Doc: "The function that hashes keys (and, for most rings, the servers' points). " +
				"twemproxy's names hash byte for byte as twemproxy does; a pool that must route " +
				"as a deployed twemproxy keeps its hash. crc16, fnv1_32, fnv1_64, fnv1a_64, java_hashcode " +
				"and java_hashcode_spread cluster keys that differ only in their last character " +
				"(chash analyze warns of it, as chash proxy does when a pool starts), and crc32 returns only 0..32767, which on a ring sends " +
				"every key to the first points past it; for new pools prefer md5 or xxh64.",
			Example: "hash: md5",
		},
		parse:  setHash,
		value:  func(p *Pool) any { return p.Hash },
		values: hashfn.Names,
	},
	{
		Key: Key{
			Name: "hash_tag", Origin: "twemproxy",
			Default: "none: the whole key is hashed",
			Doc: "Two ASCII characters that delimit the part of a key that is hashed: with \"{}\", " +
				"\"{user1}:name\" and \"{user1}:mail\" are both routed by \"user1\" and land on the " +
				"same server. A key without both characters, or with nothing between them, is " +
				"hashed whole.",
			Example: `hash_tag: "{}"`,
		},
		parse: setHashTag,
		value: func(p *Pool) any { return p.HashTag },
	},
	{
		Key: Key{
			Name: "distribution", Origin: "twemproxy",
			Default: DefaultDistribution,
			Doc: "How keys are spread over the servers. ketama, modula and random route as " +
				"twemproxy does; libmemcached, libketama (the npm package hashring), " +
				"spymemcached, nginx, groupcache and stathat as those programs do; seed as the " +
				"seed articles' Java ring; chash is chash's own ring; jump, jumpback, " +
				"rendezvous, maglev, multiprobe, bounded, memento and balanced are alternative " +
				"algorithms (chash compare sets them side by side). An unknown name is an error. " +
				"libmemcached with hash: hsieh hashes as twemproxy's hsieh, which a stock " +
				"libmemcached 1.1.4 does not offer: it refuses MEMCACHED_HASH_HSIEH and keeps " +
				"one_at_a_time.",
			Example: "distribution: chash",
		},
		// Its values are package dist's catalogue, which imports this package:
		// chash help config lists them.
		parse: setDistribution,
		value: func(p *Pool) any { return p.Distribution },
	},
	{
		Key: Key{
			Name: "points", Origin: "chash",
			Default: "the distribution's own: 160 for chash and bounded, 16 for balanced, 1 for " +
				"multiprobe, 50 for groupcache, 20 for stathat; for seed, one point per server " +
				"whatever its weight",
			Doc: "The number of points (virtual nodes) per unit of weight, for the rings that " +
				"take it: chash, seed, bounded, balanced, multiprobe, groupcache and stathat. " +
				"The other distributions, whose points are fixed by the programs they copy or " +
				"that have none, refuse it.",
			Example: "points: 160",
		},
		parse: intSetting(func(p *Pool) *int { return &p.Points }),
		value: func(p *Pool) any { return p.Points },
	},
	{
		Key: Key{
			Name: "label", Origin: "chash",
			Default: `"{name}&&VN{i}", the seed articles' label`,
			Doc: "The string the seed distribution hashes for each point of a server, {name} " +
				"standing for the server's name and {i} for the point's number. Only the seed " +
				"distribution takes it, with points above zero. Quote it: YAML reads braces as a mapping.",
			Example: `label: "{i}:{name}"`,
		},
		parse: setLabel,
		value: func(p *Pool) any { return p.Label },
	},
	{
		Key: Key{
			Name: "timeout", Origin: "twemproxy",
			Default: "0: no limit",
			Doc: "How long, in milliseconds, the proxy waits to connect to a server or for its " +
				"reply; a server that does not answer in time counts a failure (see " +
				"auto_eject_hosts) and the client gets an error. A request pipelined behind " +
				"others on a server connection has the time from when the server answered " +
				"the one before, if that is later than when it was sent, and a reply that " +
				"comes in parts the time from its last part: a server sending large replies " +
				"(a multi-get of many large values) is busy, not late.",
			Example: "timeout: 400",
		},
		parse: msSetting(func(p *Pool) *time.Duration { return &p.Timeout }),
		value: func(p *Pool) any { return p.Timeout },
	},
	{
		Key: Key{
			Name: "backlog", Origin: "twemproxy",
			Default: "512",
			Doc:     "The length of the listen queue of the pool's listener: connections the kernel completes before the proxy accepts them. The kernel caps it at its own limit (net.core.somaxconn on Linux, 4096 by default).",
			Example: "backlog: 1024",
		},
		parse: intSetting(func(p *Pool) *int { return &p.Backlog }),
		value: func(p *Pool) any { return p.Backlog },
	},
	{
		Key: Key{
			Name: "client_connections", Origin: "twemproxy",
			Default: "0: no limit",
			Doc: "The most client connections the proxy accepts on the pool's listener; one " +
				"more is closed at once. twemproxy 0.5.0 parses the key but does not enforce it.",
			Example: "client_connections: 4096",
		},
		parse: intSetting(func(p *Pool) *int { return &p.ClientConnections }),
		value: func(p *Pool) any { return p.ClientConnections },
	},
	{
		Key: Key{
			Name: "redis", Origin: "twemproxy",
			Default: "false: the pool speaks memcached's protocol",
			Doc: "Whether the pool's clients and servers speak the Redis protocol (RESP2) rather " +
				"than memcached's. chash proxy serves Redis pools (see chash help proxy for the " +
				"commands it routes, splits, answers and refuses), and route and analyze route " +
				"their keys, all exactly as nutcracker does; a file may mix both kinds of pool.",
			Example: "redis: true",
		},
		parse: boolSetting(func(p *Pool) *bool { return &p.Redis }),
		value: func(p *Pool) any { return p.Redis },
	},
	{
		Key: Key{
			Name: "redis_auth", Origin: "twemproxy",
			Default: "none: no AUTH",
			Doc: "The password of the pool's Redis servers. The proxy (twemproxy, chash proxy) " +
				"sends it with AUTH on each connection to a server, and on chash proxy's probes of " +
				"ejected ones, and requires it of its clients: they are answered -NOAUTH until " +
				"they send AUTH with it. Only a pool with redis: true may set it.",
			Example: "redis_auth: s3cret",
		},
		parse: setRedisAuth,
		value: func(p *Pool) any { return p.RedisAuth },
	},
	{
		Key: Key{
			Name: "redis_db", Origin: "twemproxy",
			Default: "0",
			Doc: "The database the proxy selects with SELECT on each connection to a Redis " +
				"server (after AUTH), and in chash proxy's probes. To clients it is database 0: " +
				"chash proxy answers SELECT 0 and refuses any other, and so MOVE and COPY's DB " +
				"of another database.",
			Example: "redis_db: 3",
		},
		parse: intSetting(func(p *Pool) *int { return &p.RedisDB }),
		value: func(p *Pool) any { return p.RedisDB },
	},
	{
		Key: Key{
			Name: "preconnect", Origin: "twemproxy",
			Default: "false: the proxy connects to a server when a request first needs it",
			Doc:     "Whether the proxy connects to every server of the pool when it starts.",
			Example: "preconnect: true",
		},
		parse: boolSetting(func(p *Pool) *bool { return &p.Preconnect }),
		value: func(p *Pool) any { return p.Preconnect },
	},
	{
		Key: Key{
			Name: "auto_eject_hosts", Origin: "twemproxy",
			Default: "false: a failing server keeps its keys",
			Doc: "Whether a server that fails server_failure_limit times in a row leaves the " +
				"distribution, its keys going to the other servers, until server_retry_timeout " +
				"passes and it answers a probe.",
			Example: "auto_eject_hosts: true",
		},
		parse: boolSetting(func(p *Pool) *bool { return &p.AutoEjectHosts }),
		value: func(p *Pool) any { return p.AutoEjectHosts },
	},
	{
		Key: Key{
			Name: "server_connections", Origin: "twemproxy",
			Default: "1",
			Doc:     "The most connections the proxy opens to each server; at least 1. A client's requests to a server all go on one of them, so that the server runs them in the client's order and a pipelined get reads the set before it (unlike twemproxy's, which take turns).",
			Example: "server_connections: 4",
		},
		parse: positiveSetting(func(p *Pool) *int { return &p.ServerConnections }, ""),
		value: func(p *Pool) any { return p.ServerConnections },
	},
	{
		Key: Key{
			Name: "server_retry_timeout", Origin: "twemproxy",
			Default: "30000 (30s)",
			Doc: "How long, in milliseconds, an ejected server stays out of the distribution (see auto_eject_hosts). " +
				"chash proxy then probes it, every as long, and readmits it once it answers; 0 probes it every 100 ms.",
			Example: "server_retry_timeout: 2000",
		},
		parse: msSetting(func(p *Pool) *time.Duration { return &p.ServerRetryTimeout }),
		value: func(p *Pool) any { return p.ServerRetryTimeout },
	},
	{
		Key: Key{
			Name: "server_failure_limit", Origin: "twemproxy",
			Default: "2",
			Doc:     "The number of failures in a row that ejects a server (see auto_eject_hosts).",
			Example: "server_failure_limit: 3",
		},
		parse: intSetting(func(p *Pool) *int { return &p.ServerFailureLimit }),
		value: func(p *Pool) any { return p.ServerFailureLimit },
	},
	{
		Key: Key{
			Name: "tcpkeepalive", Origin: "twemproxy",
			Default: "false",
			Doc:     "Whether the proxy enables TCP keepalive on its connections to the servers.",
			Example: "tcpkeepalive: true",
		},
		parse: boolSetting(func(p *Pool) *bool { return &p.TCPKeepalive }),
		value: func(p *Pool) any { return p.TCPKeepalive },
	},

	{
		Key: Key{
			Name: "eject_errors", Origin: "chash",
			Default: "chash proxy's --eject-errors, which is false unless given",
			Doc: "Whether the keys of an ejected server answer \"SERVER_ERROR server ejected\" " +
				"instead of moving to other servers, for clients that prefer misses to stale " +
				"data. It may be true only with auto_eject_hosts: true.",
			Example: "eject_errors: true",
		},
		parse: optional(boolSetting, func(p *Pool) **bool { return &p.EjectErrors }),
		value: func(p *Pool) any {
			if p.EjectErrors == nil {
				return nil
			}
			return *p.EjectErrors
		},
	},
	{
		Key: Key{
			Name: "client_idle_timeout", Origin: "chash",
			Default: "chash proxy's --idle-timeout, which is 0 (idle clients are kept) unless given",
			Doc: "How long, in milliseconds, the proxy keeps a client connection that sends " +
				"nothing; 0 keeps idle clients, as twemproxy does.",
			Example: "client_idle_timeout: 30000",
		},
		parse: optional(msSetting, func(p *Pool) **time.Duration { return &p.ClientIdleTimeout }),
		value: func(p *Pool) any {
			if p.ClientIdleTimeout == nil {
				return nil
			}
			return *p.ClientIdleTimeout
		},
	},
	{
		Key: Key{
			Name: "tls_cert_file", Origin: "chash",
			Default: "chash proxy's --tls-cert; without it, no TLS",
			Doc: "The PEM file of the certificate, with its chain, with which the pool's " +
				"listener serves clients over TLS; set with tls_key_file. A relative path is " +
				"relative to the proxy's working directory. On reload the files are read again, " +
				"so a renewed certificate needs no restart.",
			Example: "tls_cert_file: /etc/chash/cert.pem",
		},
		parse: fileSetting(func(p *Pool) *string { return &p.TLSCertFile }),
		value: func(p *Pool) any { return p.TLSCertFile },
	},
	{
		Key: Key{
			Name: "tls_key_file", Origin: "chash",
			Default: "chash proxy's --tls-key; without it, no TLS",
			Doc:     "The PEM file of the certificate's private key; set with tls_cert_file.",
			Example: "tls_key_file: /etc/chash/key.pem",
		},
		parse: fileSetting(func(p *Pool) *string { return &p.TLSKeyFile }),
		value: func(p *Pool) any { return p.TLSKeyFile },
	},
	{
		Key: Key{
			Name: "warmup", Origin: "chash",
			Default: "0: no warm-up",
			Doc: "How long, in milliseconds, the proxy warms the new servers of keys after the " +
				"pool's ring or its replicas change (a reload, a membership change, an ejection, a readmission, " +
				"a drain). While the window is open, a get, gets, gat, gats or mg that misses at a " +
				"key's new server, for a key whose server changed, reads the key from its previous " +
				"server; a hit answers the client and is copied to the new server with its flags " +
				"and remaining time to live, and removed from the previous one. Keys that did not " +
				"move never pay a second read. Writes and deletes in the window go to the new " +
				"server and delete the previous server's copy, so no stale value comes back from " +
				"it while the window is open. Commands that work on the stored item (incr, decr, " +
				"append, prepend, add, replace, cas, touch, ma, and ms and md with a mode or a cas) " +
				"first copy it from the previous server, as a read would, so that a counter goes on " +
				"counting; a cas value that a warmed gets returned is the previous server's, which " +
				"the copy does not have (EXISTS: read it again with gets). A call to a previous server " +
				"waits the pool's timeout, or a second without one, and a previous server that " +
				"fails is neither read nor sent deletes (it owes them) for server_retry_timeout " +
				"(at least a second), so one that hangs costs a timeout once, not a request. A server " +
				"that leaves and comes back after its window closed holds the values it had, which " +
				"writes made meanwhile on other servers did not reach (as in a pool without " +
				"warm-up): empty it (flush_all) before it rejoins where an old value must not come " +
				"back. memcached pools only.",
			Example: "warmup: 60000",
		},
		parse: msSetting(func(p *Pool) *time.Duration { return &p.Warmup }),
		value: func(p *Pool) any { return p.Warmup },
	},
	{
		Key: Key{
			Name: "replicas", Origin: "chash",
			Default: "1: each key on one server",
			Doc: "The number of distinct servers each key is stored on: the first replicas " +
				"servers of the key's replica set, the first being the server chash route names. " +
				"Writes (set, add, replace, append, prepend, cas, incr, decr, touch, delete and " +
				"the meta commands) go to all of them; reads go to the first that is up and fail " +
				"over to the next on a server's failure (SERVER_ERROR, a connection error, a timeout, " +
				"an ejection; ERROR and CLIENT_ERROR, about the request, are the answer). Commands whose outcome " +
				"depends on the stored item (add, replace, append, prepend, cas, incr, decr, ma, " +
				"ms with a mode or a cas, md with a cas) are decided by the first replica that is " +
				"up (the next one if it fails), and the item it then holds is copied to the others. A write that cannot reach " +
				"a replica is remembered and replayed, as a delete, before that replica serves " +
				"reads again. With warmup, a read that finds a key at one replica while a window " +
				"is open copies it to the replicas a ring change made the key's (once a key), " +
				"so that a server that joins as a key's second replica gets it too. " +
				"Only the distributions with replica sets (chash, rendezvous, " +
				"multiprobe, balanced) take more than 1; memcached pools only.",
			Example: "replicas: 2",
		},
		parse: positiveSetting(func(p *Pool) *int { return &p.Replicas }, " (1: each key on one server)"),
		value: func(p *Pool) any { return p.Replicas },
	},
	{
		Key: Key{
			Name: "read_miss_failover", Origin: "chash",
			Default: "false: reads fail over only when a replica fails",
			Doc: "Whether a read that misses at a key's first replica tries the next replica, " +
				"for pools whose replicas may lack keys (a replica added, or restarted empty). " +
				"Needs replicas above 1.",
			Example: "read_miss_failover: true",
		},
		parse: boolSetting(func(p *Pool) *bool { return &p.ReadMissFailover }),
		value: func(p *Pool) any { return p.ReadMissFailover },
	},
	{
		Key: Key{
			Name: "drain", Origin: "chash",
			Default: "none: every server owns keys",
			Doc: "Servers of the pool, by name, that own no keys but stay connected, so that a " +
				"server can leave without a cold cache: a reload that adds a server here moves its " +
				"keys to their new servers and, with warmup, opens a warm-up window in which the " +
				"keys read are copied from it. Once the window has closed, remove the server from " +
				"servers. chash proxy's admin endpoint POST /drain does the same without a file. " +
				"At least one server must stay undrained.",
			Example: "drain: [10.0.0.2:11211]",
		},
		parse: setDrain,
		value: func(p *Pool) any { return p.Drain },
	},
	{
		Key: Key{
			Name: "servers_from", Origin: "chash",
			Default: "none: the servers are listed under servers",
			Doc: "Where the pool's servers live, instead of a servers: list (a pool gives one of " +
				"the two): \"etcd://HOST:PORT[,HOST:PORT...]/PREFIX/\", the keys under an etcd key " +
				"prefix (the URL's path, slashes included), each holding one server line as in " +
				"servers: (\"host:port:weight [name]\"; the key's own name does not matter, the " +
				"list is in the keys' order); or \"file:PATH\", a file of server lines, one a line, " +
				"'#' starting a comment (a relative PATH is from the working directory, as for the " +
				"TLS files; replace the file by renaming a new one over it, so that no reader " +
				"sees it half written). chash proxy reads the list at start, then follows it: each " +
				"change is applied as a reload applies new servers, an invalid list is refused and " +
				"the last good one keeps serving, and an unreachable etcd leaves the last list " +
				"serving while the proxy retries. chash route, analyze and diff read the list once. " +
				"chash register keeps a server's key alive under a lease.",
			Example: "servers_from: etcd://10.0.0.1:2379,10.0.0.2:2379/chash/cache/",
		},
		parse: setServersFrom,
		value: func(p *Pool) any { return p.ServersFrom },
	},
	{
		Key: Key{
			Name: "servers", Origin: "twemproxy",
			Default: "none: a pool needs at least one server, or servers_from",
			Doc: "The pool's servers, one \"host:port:weight [name]\" or \"/path/to/socket:weight " +
				"[name]\" line each. The weight is a positive integer; the name, if given, is what " +
				"the distribution hashes and what chash route prints instead of host:port, so " +
				"that a server can move to another address and keep its keys. No two servers may " +
				"have the same name.",
			Example: "servers:\n - 10.0.0.1:11211:1\n - 10.0.0.2:11211:2 cache-2",
		},
		parse: setServers,
		value: func(p *Pool) any {
			lines := make([]string, len(p.Servers))
			for i, s := range p.Servers {
				lines[i] = s.String()
			}
			return lines
		},
	},
}

// lookupSetting returns the setting of the key called name, or nil.
func lookupSetting(name string) *setting {
	for i := range settings {
		if settings[i].Name == name {
			return &settings[i]
		}
	}
	return nil
}

// settingNames returns the names of the keys, sorted, for errors.
func settingNames() string {
	names := make([]string, len(settings))
	for i, s := range settings {
		names[i] = s.Name
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Keys returns every key a pool may set, twemproxy's and chash's, with their
// documentation: the configuration reference, in the order a file usually
// gives the keys.
func Keys() []Key {
	keys := make([]Key, len(settings))
	for i, s := range settings {
		keys[i] = s.Key
		if s.values != nil {
			keys[i].Values = s.values()
		}
	}
	return keys
}

// NewPool returns a pool called name with twemproxy's defaults for every key
// (nc_conf.h), as Parse makes a pool that sets no key. A caller building a
// configuration in code sets the fields it needs, Servers at least, and
// passes the File to Marshal or to a consumer of Files.
func NewPool(name string) *Pool {
	return &Pool{
		Name:               name,
		Distribution:       DefaultDistribution,
		Backlog:            512,
		ServerConnections:  1,
		ServerRetryTimeout: 30 * time.Second,
		ServerFailureLimit: 2,
		Replicas:           1,
	}
}
