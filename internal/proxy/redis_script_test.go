package proxy

import (
	"crypto/sha1"
	"fmt"
)

// ncMode is what nutcracker 0.5.0 does with a request of the script.
type ncMode uint8

const (
	ncSame   ncMode = iota // the same reply as Redis (and chash proxy)
	ncCloses               // it closes the connection unanswered
	ncOther                // another reply, its own
)

// redisCase is a request of the script and what answers it.
type redisCase struct {
	req string // the arguments, separated by single spaces
	// proxy is chash proxy's reply where it is not Redis's (a command it
	// refuses); the request is then not sent to Redis.
	proxy string
	nc    ncMode
}

var evalSHA = fmt.Sprintf("%x", sha1.Sum([]byte("return(KEYS[1])")))

// unsupported is chash proxy's reply refusing a command.
func unsupported(name string) string {
	return "-ERR command '" + name + "' is not supported by the proxy\r\n"
}

// redisScript is sent, one request at a time, to a redis-server, to chash
// proxy in front of three and to nutcracker in front of three others: every
// family of commands, the errors Redis answers, and the commands the proxy
// refuses. Keys of multi-key commands other than those the proxy splits share
// a hash tag. Replies that would differ between runs (random members, times,
// client ids) are left out: sets hold integers, which Redis lists in order.
var redisScript = []redisCase{
	// Connection.
	{req: "PING"},
	{req: "PING hello", nc: ncCloses},
	{req: "ECHO hi", nc: ncCloses},
	{req: "SELECT 0", nc: ncCloses},
	{req: "SELECT 1", proxy: "-ERR database 1 is not served by the proxy (only 0)\r\n", nc: ncCloses},
	{req: "SELECT x", nc: ncCloses},
	{req: "SELECT -1", nc: ncCloses},
	{req: "SELECT 4294967296", nc: ncCloses},
	{req: "AUTH x", nc: ncOther}, // "-ERR Client sent AUTH, but no password is set"
	{req: "AUTH default x", nc: ncCloses},
	{req: "AUTH a b c", nc: ncCloses},
	{req: "HELLO 4", nc: ncCloses},
	{req: "HELLO x", nc: ncCloses},
	{req: "HELLO 3", proxy: "-NOPROTO unsupported protocol version: the proxy speaks RESP2 only\r\n", nc: ncCloses},
	{req: "COMMAND COUNT", nc: ncCloses},
	{req: "COMMAND INFO get", nc: ncCloses},
	// Strings.
	{req: "SET str:a hello"},
	{req: "GET str:a"},
	{req: "GET str:none"},
	{req: "SET str:a world NX"},
	{req: "SET str:b 10 EX 1000"},
	{req: "GETSET str:a hi"},
	{req: "APPEND str:a !!"},
	{req: "STRLEN str:a"},
	{req: "GETRANGE str:a 0 1"},
	{req: "SETRANGE str:a 1 ey"},
	{req: "SUBSTR str:a 0 2", nc: ncCloses},
	{req: "INCR str:n"},
	{req: "INCRBY str:n 41"},
	{req: "DECR str:n"},
	{req: "DECRBY str:n 2"},
	{req: "INCRBYFLOAT str:f 1.5"},
	{req: "INCR str:a"},
	{req: "SETNX str:a x"},
	{req: "SETEX str:c 100 v"},
	{req: "PSETEX str:d 100000 v"},
	{req: "GETDEL str:d"},
	{req: "GETEX str:c PERSIST"},
	{req: "MSET str:m1 1 str:m2 2 str:m3 3 str:m4 4 str:m5 5"},
	{req: "MGET str:m1 str:m2 str:none str:m3 str:m4 str:m5 str:m1"},
	{req: "MGET str:m1"},
	{req: "MSETNX {str}x 1 {str}y 2", nc: ncCloses},
	{req: "LCS {str}x {str}y", nc: ncCloses},
	// Keys.
	{req: "EXISTS str:m1 str:none str:m2 str:m1"},
	{req: "TOUCH str:m1 str:m2 str:none"},
	{req: "TYPE str:a"},
	{req: "EXPIREAT str:m1 4102444800"},
	{req: "EXPIRETIME str:m1", nc: ncCloses},
	{req: "PEXPIRETIME str:m1", nc: ncCloses},
	{req: "TTL str:none"},
	{req: "TTL str:a"},
	{req: "PERSIST str:m1"},
	{req: "EXPIRE str:m2 1000"},
	{req: "PERSIST str:m2"},
	{req: "RENAME {k}a {k}b", nc: ncCloses},
	{req: "SET {k}a 1"},
	{req: "RENAME {k}a {k}b", nc: ncCloses},
	{req: "RENAMENX {k}b {k}c", nc: ncCloses},
	{req: "COPY {k}c {k}d", nc: ncOther}, // nutcracker refused the RENAMEs that made {k}c
	{req: "DUMP {k}c", nc: ncOther},      // likewise
	{req: "OBJECT ENCODING {k}c", nc: ncCloses},
	{req: "RPUSH sort:l 3 1 2"},
	{req: "SORT sort:l"},
	{req: "SORT sort:l DESC LIMIT 0 2"},
	{req: "SORT_RO sort:l ALPHA", nc: ncCloses},
	{req: "DEL str:m1 str:m2 str:m3 str:none"},
	{req: "UNLINK str:m4 str:m5"},
	{req: "DEL str:b"},
	// Bitmaps.
	{req: "SETBIT bit:a 7 1"},
	{req: "GETBIT bit:a 7"},
	{req: "BITCOUNT bit:a"},
	{req: "BITPOS bit:a 1"},
	{req: "SET {bit}x abc"},
	{req: "SET {bit}y abd"},
	{req: "BITOP AND {bit}z {bit}x {bit}y", nc: ncCloses},
	{req: "GET {bit}z", nc: ncOther}, // nutcracker refused the BITOP that made it
	{req: "BITFIELD bit:b SET u8 0 255 GET u8 0"},
	{req: "BITFIELD_RO bit:b GET u8 0", nc: ncCloses},
	// Hashes.
	{req: "HSET h:a f1 v1 f2 v2"},
	{req: "HGET h:a f1"},
	{req: "HMSET h:a f3 v3"},
	{req: "HMGET h:a f1 f3 nf"},
	{req: "HGETALL h:a"},
	{req: "HDEL h:a f3"},
	{req: "HLEN h:a"},
	{req: "HEXISTS h:a f1"},
	{req: "HINCRBY h:a n 5"},
	{req: "HINCRBYFLOAT h:a fl 2.5"},
	{req: "HKEYS h:a"},
	{req: "HVALS h:a"},
	{req: "HSETNX h:a f1 x"},
	{req: "HSTRLEN h:a f1"},
	{req: "HSCAN h:a 0"},
	{req: "HSET h:one f v"},
	{req: "HRANDFIELD h:one"},
	// Lists.
	{req: "RPUSH l:a a b c"},
	{req: "LPUSH l:a z"},
	{req: "LRANGE l:a 0 -1"},
	{req: "LLEN l:a"},
	{req: "LINDEX l:a 1"},
	{req: "LSET l:a 1 A"},
	{req: "LINSERT l:a BEFORE c B"},
	{req: "LREM l:a 1 B"},
	{req: "LPOS l:a c"},
	{req: "LTRIM l:a 0 2"},
	{req: "LPOP l:a"},
	{req: "RPOP l:a"},
	{req: "LPUSHX l:none x"},
	{req: "RPUSHX l:a y"},
	{req: "RPUSH {l}src 1 2 3 4"},
	{req: "RPOPLPUSH {l}src {l}dst"},
	{req: "LMOVE {l}src {l}dst LEFT RIGHT"},
	{req: "LMPOP 2 {l}src {l}dst LEFT COUNT 2", nc: ncCloses},
	{req: "LRANGE {l}dst 0 -1"},
	// Sets, of integers, which Redis lists in order.
	{req: "SADD set:a 3 1 2"},
	{req: "SMEMBERS set:a"},
	{req: "SISMEMBER set:a 1"},
	{req: "SMISMEMBER set:a 1 9"},
	{req: "SCARD set:a"},
	{req: "SREM set:a 3"},
	{req: "SADD {s}x 1 2 3"},
	{req: "SADD {s}y 2 3 4"},
	{req: "SINTER {s}x {s}y"},
	{req: "SUNION {s}x {s}y"},
	{req: "SDIFF {s}x {s}y"},
	{req: "SINTERSTORE {s}i {s}x {s}y"},
	{req: "SUNIONSTORE {s}u {s}x {s}y"},
	{req: "SDIFFSTORE {s}d {s}x {s}y"},
	{req: "SINTERCARD 2 {s}x {s}y", nc: ncCloses},
	{req: "SMOVE {s}x {s}y 1"},
	{req: "SSCAN set:a 0"},
	{req: "SADD set:one 7"},
	{req: "SRANDMEMBER set:one"},
	{req: "SPOP set:one"},
	// Sorted sets.
	{req: "ZADD z:a 1 one 2 two 3 three"},
	{req: "ZRANGE z:a 0 -1 WITHSCORES"},
	{req: "ZREVRANGE z:a 0 1"},
	{req: "ZRANGEBYSCORE z:a 1 2"},
	{req: "ZREVRANGEBYSCORE z:a 3 2"},
	{req: "ZRANK z:a two"},
	{req: "ZREVRANK z:a two"},
	{req: "ZSCORE z:a two"},
	{req: "ZMSCORE z:a one nope"},
	{req: "ZINCRBY z:a 5 one"},
	{req: "ZCARD z:a"},
	{req: "ZCOUNT z:a 0 10"},
	{req: "ZADD z:lex 0 a 0 b 0 c"},
	{req: "ZLEXCOUNT z:lex - +"},
	{req: "ZRANGEBYLEX z:lex [a [b"},
	{req: "ZREVRANGEBYLEX z:lex [c [b"},
	{req: "ZREMRANGEBYLEX z:lex [a [a"},
	{req: "ZREM z:a three"},
	{req: "ZREMRANGEBYRANK z:a 0 0"},
	{req: "ZREMRANGEBYSCORE z:a 100 200"},
	{req: "ZPOPMIN z:a"},
	{req: "ZPOPMAX z:lex"},
	{req: "ZADD z:one 1 m"},
	{req: "ZRANDMEMBER z:one"},
	{req: "ZSCAN z:lex 0"},
	{req: "ZADD {z}x 1 a 2 b"},
	{req: "ZADD {z}y 3 b 4 c"},
	{req: "ZUNIONSTORE {z}u 2 {z}x {z}y"},
	{req: "ZINTERSTORE {z}i 2 {z}x {z}y WEIGHTS 1 2"},
	{req: "ZUNION 2 {z}x {z}y WITHSCORES"},
	{req: "ZINTER 2 {z}x {z}y"},
	{req: "ZDIFF 2 {z}x {z}y"},
	{req: "ZDIFFSTORE {z}d 2 {z}x {z}y"},
	{req: "ZINTERCARD 2 {z}x {z}y", nc: ncCloses},
	{req: "ZRANGESTORE {z}r {z}x 0 -1"},
	{req: "ZMPOP 1 {z}x MIN", nc: ncCloses},
	// HyperLogLog.
	{req: "PFADD hll:a x y z"},
	{req: "PFCOUNT hll:a"},
	{req: "PFADD {h}1 a b"},
	{req: "PFADD {h}2 b c"},
	{req: "PFMERGE {h}m {h}1 {h}2"},
	{req: "PFCOUNT {h}m {h}1"},
	// Geo.
	{req: "GEOADD geo:a 13.361389 38.115556 Palermo 15.087269 37.502669 Catania"},
	{req: "GEOPOS geo:a Palermo"},
	{req: "GEODIST geo:a Palermo Catania km"},
	{req: "GEOHASH geo:a Palermo"},
	{req: "GEOSEARCH geo:a FROMLONLAT 15 37 BYRADIUS 200 km ASC"},
	{req: "GEORADIUS_RO geo:a 15 37 200 km ASC", nc: ncCloses},
	{req: "GEORADIUSBYMEMBER_RO geo:a Palermo 200 km ASC", nc: ncCloses},
	{req: "GEOADD {g}src 13.361389 38.115556 Palermo"},
	{req: "GEOSEARCHSTORE {g}dst {g}src FROMLONLAT 15 37 BYRADIUS 200 km"},
	// Streams.
	{req: "XADD x:a 1-1 f v", nc: ncCloses},
	{req: "XADD x:a 2-1 f w", nc: ncCloses},
	{req: "XLEN x:a", nc: ncCloses},
	{req: "XRANGE x:a - +", nc: ncCloses},
	{req: "XREVRANGE x:a + - COUNT 1", nc: ncCloses},
	{req: "XGROUP CREATE x:a g 0", nc: ncCloses},
	{req: "XPENDING x:a g", nc: ncCloses},
	{req: "XCLAIM x:a g c 0 1-1", nc: ncCloses},
	{req: "XAUTOCLAIM x:a g c 0 0-0", nc: ncCloses},
	{req: "XACK x:a g 1-1", nc: ncCloses},
	{req: "XINFO GROUPS x:a", nc: ncCloses},
	{req: "XDEL x:a 1-1", nc: ncCloses},
	{req: "XTRIM x:a MAXLEN 0", nc: ncCloses},
	{req: "XSETID x:a 5-0", nc: ncCloses},
	// Scripts, routed by their keys.
	{req: "EVAL return(KEYS[1]) 1 ev:a"},
	{req: "EVAL return(redis.call('set',KEYS[1],ARGV[1])) 1 ev:a 5"},
	{req: "EVAL return(redis.call('get',KEYS[1])) 1 ev:a"},
	{req: "EVALSHA " + evalSHA + " 1 ev:a"},
	{req: "EVAL_RO return(KEYS[1]) 1 ev:a", nc: ncCloses},
	{req: "EVAL return(KEYS[2]) 2 {e}1 {e}2"},
	{req: "EVAL return(1) 0", proxy: "-ERR 'eval' without keys cannot be routed\r\n", nc: ncCloses},
	{req: "EVAL return(1) x", nc: ncCloses},
	{req: "FCALL f 1 ev:a", nc: ncCloses},
	// Errors Redis answers alike through the proxy.
	{req: "FOO bar", nc: ncCloses},
	{req: "GET", nc: ncCloses},
	{req: "MSET a", nc: ncCloses},
	{req: "HSET h:a f"},
	{req: "LPUSH str:a x"},
	// Commands the proxy refuses; the connection reads on.
	{req: "KEYS *", proxy: unsupported("keys"), nc: ncCloses},
	{req: "SCAN 0", proxy: unsupported("scan"), nc: ncCloses},
	// After a refused MULTI, nothing runs until EXEC or DISCARD; nutcracker
	// closed the connection at MULTI, and runs the SET on a new one.
	{req: "MULTI", proxy: unsupported("multi"), nc: ncCloses},
	{req: "SET str:tx x", proxy: "-" + replyNotRun + "\r\n", nc: ncOther},
	{req: "EXEC", proxy: "-" + replyExecAbort + "\r\n", nc: ncCloses},
	{req: "EXEC", proxy: unsupported("exec"), nc: ncCloses},
	{req: "DISCARD", proxy: unsupported("discard"), nc: ncCloses},
	{req: "WATCH str:a", proxy: unsupported("watch"), nc: ncCloses},
	{req: "SUBSCRIBE ch", proxy: unsupported("subscribe"), nc: ncCloses},
	{req: "PUBLISH ch m", proxy: unsupported("publish"), nc: ncCloses},
	{req: "CLUSTER INFO", proxy: unsupported("cluster"), nc: ncCloses},
	{req: "CONFIG GET maxmemory", proxy: unsupported("config"), nc: ncCloses},
	{req: "INFO", proxy: unsupported("info"), nc: ncCloses},
	{req: "DBSIZE", proxy: unsupported("dbsize"), nc: ncCloses},
	{req: "FLUSHALL", proxy: unsupported("flushall"), nc: ncCloses},
	{req: "RANDOMKEY", proxy: unsupported("randomkey"), nc: ncCloses},
	{req: "BLPOP l:a 0", proxy: unsupported("blpop"), nc: ncCloses},
	{req: "XREAD STREAMS x:a 0", proxy: unsupported("xread"), nc: ncCloses},
	{req: "CLIENT LIST", proxy: unsupported("client|list"), nc: ncCloses},
	{req: "CLIENT KILL ID 1", proxy: unsupported("client|kill"), nc: ncCloses},
	{req: "CLIENT GETNAME", nc: ncCloses},
	{req: "CLIENT SETNAME conn-1", nc: ncCloses},
	{req: "client getname", nc: ncCloses},
	{req: "CLIENT SETNAME na\xc3\xafve", nc: ncCloses},
	{req: "CLIENT GETNAME x", nc: ncCloses},
	{req: "CLIENT SETNAME", nc: ncCloses},
	{req: "CLIENT NOSUCH", nc: ncCloses},
	{req: "Client SetInfo lib-name x", proxy: "+OK\r\n", nc: ncCloses}, // Redis 7.2's (7.0: unknown subcommand)
	{req: "CLIENT SETINFO lib-ver 9.7.1", proxy: "+OK\r\n", nc: ncCloses},
	{req: "CLIENT SETINFO lib-color red", proxy: "-ERR Unrecognized option 'lib-color'\r\n", nc: ncCloses},
	{req: "CLIENT", nc: ncCloses},
	{req: "SCRIPT FLUSH", proxy: unsupported("script"), nc: ncCloses},
	{req: "SHUTDOWN", proxy: unsupported("shutdown"), nc: ncCloses},
	{req: "GET str:a"},
	{req: "QUIT", nc: ncCloses},
}
