// Package membership keeps a pool's server list in step with where it lives:
// the keys under an etcd prefix, or a file, named by a servers_from URL
// (ParseURL):
//
//	etcd://HOST:PORT[,HOST:PORT...]/PREFIX/
//	file:PATH
//
// Under an etcd prefix every key holds one server line, exactly as in a
// nutcracker.yml servers: list ("host:port:weight [name]"); the key's own
// name does not matter, but its place does: the list is in the keys' byte
// order, the same in every reader, since some distributions (modula, for
// one) depend on the order of the servers. White space around a value is
// ignored. chash register (Register) keeps such a key alive under a lease,
// while the server answers CheckServer if asked to.
//
// A file holds one server line per line, in the order of the list. Blank
// lines are skipped, and a '#' at the start of a line or after a space or a
// tab starts a comment, as in YAML:
//
//	# cache servers, rack 1
//	10.0.0.1:11211:1 cache-1
//	10.0.0.2:11211:2 cache-2   # twice the memory
//
// The file is plain text, not YAML: no "- " before a line, no quotes.
//
// A list is valid when every value or line is a server line and no two
// servers share a name (the alias, else host:port). An empty prefix, or a
// file of no servers, is a valid and empty list.
//
// Open reads a source's first list; Run then follows it and hands each new
// valid list, with its revision, to a function such as the proxy's per-pool
// update. etcd is listed, then watched from the next revision, each revision
// giving a list; after a compaction of revisions the watch needs, or after
// the connection to etcd was lost or etcd failed to answer a heartbeat, the
// whole prefix is read again. A file is read again when its directory
// reports a change (an atomic rename over the file included) and every few
// seconds. An invalid list is refused, logged and counted, and the last good
// list keeps serving. If etcd does not answer the source keeps its last
// list, retries with backoff, logs the change of state once (not per retry)
// and catches up when etcd is back; a deleted file is kept likewise until it
// is back. Status reports the state for metrics.
//
// Where etcd does not answer at start, Open waits for it until its context
// is done, then fails naming the endpoints: the caller chooses between a
// clear error (a deadline) and waiting (none).
//
// Read is a one-shot read, for commands that route or analyse a pool.
package membership
