package proxy

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// pool is one pool of the configuration: a listener, its clients, and the routing
// state that reloads and ejections replace.
type pool struct {
	proxy *Proxy
	name  string
	ln    net.Listener
	raw   net.Listener // ln without TLS: the socket
	state atomic.Pointer[state]
	cert  atomic.Pointer[tls.Certificate] // the pool's own (tls_cert_file), or nil
	stats *poolStats                      // shared with the pool it replaces, as refused
	// refused counts the requests the pool refused, by class.
	refused *refusals
	codec   codec
	reqs    sync.Pool   // *clientReq, with requests of codec
	cmds    []*counter  // by command
	lat     []*observer // by command
	moves   moveLog     // the moved key space, measured off the path of changes
	large   largeValues // the large values lately seen (memory.go)
	// clusters says that the pool's hash sends similar keys to one server,
	// for the status page (warnClusters); nil if it does not.
	clusters atomic.Pointer[string]

	copier warmCopier // of warm-up copies (warmup.go)
	// drains are the servers drained through the admin endpoint, by name;
	// guarded by mu (drain.go).
	drains map[string]*drainState

	mu       sync.Mutex // serializes state changes
	stopping atomic.Bool
	// handedOn is set when a reload restarted the pool as another, which
	// counts on with its counters and refusals: its stop leaves them be.
	handedOn atomic.Bool
	stopped  chan struct{} // closed when the pool stops: clients read no further requests
	stopOnce sync.Once
	clients  sync.WaitGroup
	conns    sync.Map // net.Conn -> struct{}, the open client connections
	nconns   atomic.Int64
	parked   atomic.Int64  // clients parked (parker), of nconns
	lanes    atomic.Uint32 // the last client.lane given
	sheds    atomic.Uint64 // idle clients parked or handed to a new goroutine (shedAfter), for tests
	done     chan struct{} // closed when the accept loop has returned
}

// certificate returns the pool's own certificate, as tls.Config.GetCertificate.
func (pl *pool) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return pl.cert.Load(), nil
}

// serve accepts clients until the listener is closed.
func (pl *pool) serve() {
	defer close(pl.done)
	for {
		conn, err := pl.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, or a connection reset before it was
			// accepted: wait a little, as net/http does, and go on.
			pl.stats.clientErr.Add(1)
			if outOfFiles(err) {
				pl.proxy.logOutOfFiles("accepting clients, who wait in the listen queue", err)
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		pl.proxy.stats.opened.Add(1)
		st := pl.state.Load()
		if max := st.cfg.ClientConnections; max > 0 && pl.nconns.Load() >= int64(max) {
			pl.stats.clientErr.Add(1)
			pl.refused.add(pl.proxy.log, pl.name, refusedClientConnections, nil, conn.RemoteAddr().String())
			conn.Close()
			continue
		}
		if max := pl.proxy.clientLimit(); max > 0 && pl.proxy.clients.Load() >= max {
			pl.stats.clientErr.Add(1)
			pl.refused.add(pl.proxy.log, pl.name, refusedOpenFiles, nil, conn.RemoteAddr().String())
			pl.proxy.logOutOfFiles("accepting clients, who are closed at once",
				fmt.Errorf("%d clients are open, the most that the open files limit of %d leaves room for beside the servers' connections", max, openFilesLimit()))
			conn.Close()
			continue
		}
		pl.nconns.Add(1)
		pl.proxy.clients.Add(1)
		pl.stats.clientTotal.Add(1)
		pl.conns.Store(conn, struct{}{})
		pl.clients.Add(1)
		c := &client{pool: pl, conn: conn, lane: pl.lanes.Add(1)}
		go c.serve()
	}
}

// drain stops the pool taking clients and its clients reading requests: each
// answers every request it has read and closes its connection, gracefully
// (see Proxy.Shutdown).
func (pl *pool) drain() {
	pl.stopOnce.Do(func() {
		pl.ln.Close()
		<-pl.done
		pl.stopping.Store(true)
		close(pl.stopped)
		// Wake the clients waiting for their next bytes; each checks
		// stopping after setting its own deadline, so this one is the last.
		pl.conns.Range(func(k, _ any) bool {
			k.(net.Conn).SetReadDeadline(time.Now())
			return true
		})
		idleClients.wakePool(pl) // each parked after it set stopping wakes itself
	})
}

// stop closes the pool's listener, servers and clients, and drops the
// metrics of the servers named in forget. The servers close first: a client
// waits for the replies of its requests in flight, which a server that does
// not answer (frozen, with no timeout) never sends, and closing it fails
// them. Only then can the clients' connections close: a client served
// within a raw read of its socket (rawIO) waits there, and a socket's Close
// waits for the read to end.
func (pl *pool) stop(forget []string) {
	pl.drain()
	for _, s := range pl.state.Load().list {
		s.close()
	}
	pl.conns.Range(func(k, _ any) bool {
		k.(net.Conn).Close()
		return true
	})
	pl.clients.Wait()
	if !pl.handedOn.Load() {
		pl.refused.close(pl.proxy.log, pl.name)
		// A pool that goes (not one restarted as another, which counts
		// on in them) takes its per-command series with it.
		pl.proxy.metrics.forgetPool(pl.name)
	}
	for _, name := range forget {
		pl.proxy.metrics.forgetServer(pl.name, name)
	}
}
