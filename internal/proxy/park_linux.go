package proxy

import (
	"sync"
	"syscall"
	"time"
)

// parker holds the clients idle for shedAfter without a goroutine each: their
// sockets wait in an epoll set of its own, watched by one goroutine for the
// process, and a client goes on in a new goroutine (client.run) when its
// socket becomes readable or reports the peer gone, when its idle timeout
// falls, or when its pool drains. A parked client costs its connection and a
// few words here, not a goroutine's stack (2 KiB, the runtime's smallest),
// which is most of what an idle client cost while it waited in a goroutine:
// nutcracker, an event loop, holds 0.3 KiB a client.
//
// The socket stays in the runtime's network poller too; the new goroutine's
// first read finds the bytes that woke it. A wake costs two epoll_ctl calls
// and the parker's wait, a few microseconds, at most once per shedAfter of
// idleness.
type parker struct {
	mu      sync.Mutex
	started bool // the set is made and watched (epfd)
	epfd    int
	next    uint64
	parked  map[uint64]*parkedClient
	failed  bool // the wait failed: no more clients are parked
}

// parkedClient is one client that waits in the parker's set.
type parkedClient struct {
	c     *client
	timer *time.Timer // its idle timeout's, if it has one
}

// idleClients is the process's parker.
var idleClients parker

// park hands c, idle for shedAfter with every request answered, to the
// parker, and reports whether it took it; if not, c goes on in a goroutine
// as before. c's read deadline is its idle timeout's (disarm).
func (pk *parker) park(c *client) bool {
	r, ok := c.rw.(*rawIO)
	if !ok {
		return false
	}
	pk.mu.Lock()
	if pk.failed || !pk.started && !pk.start() {
		pk.mu.Unlock()
		return false
	}
	pk.next++
	id := pk.next
	var errno error
	err := r.rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT}
		ev.Fd, ev.Pad = int32(uint32(id)), int32(uint32(id>>32))
		errno = syscall.EpollCtl(pk.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err != nil || errno != nil {
		pk.mu.Unlock()
		return false
	}
	p := &parkedClient{c: c}
	if !c.idleAt.IsZero() {
		p.timer = time.AfterFunc(time.Until(c.idleAt), func() { pk.wake(id) })
	}
	pk.parked[id] = p
	c.pool.parked.Add(1)
	pk.mu.Unlock()
	// Checked after parking: drain sets stopping before it wakes the
	// parked clients of its pool.
	if c.pool.stopping.Load() {
		pk.wake(id)
	}
	return true
}

// wake takes the client parked as id out of the set, if it is still there,
// and serves it in a new goroutine.
func (pk *parker) wake(id uint64) {
	pk.mu.Lock()
	p := pk.parked[id]
	delete(pk.parked, id)
	if p != nil {
		p.c.pool.parked.Add(-1)
	}
	pk.mu.Unlock()
	if p == nil {
		return // woken already
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	// The socket may have closed (a pool that stopped): then it left the
	// set with its descriptor.
	p.c.rw.(*rawIO).rc.Control(func(fd uintptr) {
		syscall.EpollCtl(pk.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
	})
	go p.c.run()
}

// wakePool wakes the clients of pl parked: pl drains.
func (pk *parker) wakePool(pl *pool) {
	pk.wakeWhere(func(c *client) bool { return c.pool == pl })
}

// wakeWhere wakes the parked clients that match.
func (pk *parker) wakeWhere(match func(*client) bool) {
	pk.mu.Lock()
	var ids []uint64
	for id, p := range pk.parked {
		if match(p.c) {
			ids = append(ids, id)
		}
	}
	pk.mu.Unlock()
	for _, id := range ids {
		pk.wake(id)
	}
}

// parkedCount returns the clients parked, for tests.
func (pk *parker) parkedCount() int {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	return len(pk.parked)
}

// start makes the epoll set and the goroutine that waits on it, and reports
// whether it could; mu is held. One that could not (out of file descriptors,
// say) is tried again at the next park.
func (pk *parker) start() bool {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	pk.epfd, pk.parked, pk.started = fd, make(map[uint64]*parkedClient), true
	go pk.loop()
	return true
}

// loop waits for the parked sockets' events and wakes their clients. It waits
// in a blocking system call, on a thread of its own while it waits.
func (pk *parker) loop() {
	events := make([]syscall.EpollEvent, 64)
	for {
		n, err := syscall.EpollWait(pk.epfd, events, -1)
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			// Not expected of a valid set: serve the clients parked in
			// goroutines again, and park no more.
			pk.mu.Lock()
			pk.failed = true
			pk.mu.Unlock()
			pk.wakeWhere(func(*client) bool { return true })
			return
		}
		for _, ev := range events[:n] {
			pk.wake(uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32)
		}
	}
}
