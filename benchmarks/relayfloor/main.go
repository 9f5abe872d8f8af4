//go:build linux

// Command relayfloor is a byte relay in front of one server, in two designs,
// to measure what relaying a request costs a Go program at one client
// connection, below any proxy's own work (run.sh measures it beside chash
// proxy and nutcracker):
//
//	-mode copy   two goroutines per client, one copying each way (io.Copy),
//	             waiting in the Go runtime's network poller
//	-mode epoll  one goroutine per client on a locked OS thread, waiting in
//	             epoll_wait itself and reading and writing with raw system
//	             calls, as an event loop in C does
//
// It parses nothing: each client's bytes go to a connection of its own to
// the server, and back.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime"
	"syscall"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen on `ADDR`")
	server := flag.String("server", "", "relay to the server at `ADDR`")
	mode := flag.String("mode", "copy", "copy or epoll")
	flag.Parse()
	if *server == "" || (*mode != "copy" && *mode != "epoll") {
		flag.Usage()
		os.Exit(2)
	}
	runtime.GOMAXPROCS(1) // one thread runs Go code, as chash proxy at this load
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		s, err := net.Dial("tcp", *server)
		if err != nil {
			log.Print(err)
			c.Close()
			continue
		}
		if *mode == "copy" {
			go relay(c, s)
			go relay(s, c)
		} else {
			go loop(c.(*net.TCPConn), s.(*net.TCPConn))
		}
	}
}

// relay copies from src to dst, then closes both.
func relay(dst, src net.Conn) {
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// loop relays between c and s on this goroutine's own thread and epoll
// instance until either side ends.
func loop(c, s *net.TCPConn) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cf, err := c.File() // blocking copies of the sockets, set non-blocking below
	c.Close()
	if err != nil {
		log.Print(err)
		return
	}
	defer cf.Close()
	sf, err := s.File()
	s.Close()
	if err != nil {
		log.Print(err)
		return
	}
	defer sf.Close()
	cfd, sfd := int(cf.Fd()), int(sf.Fd())
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		log.Print(err)
		return
	}
	defer syscall.Close(ep)
	for _, fd := range []int{cfd, sfd} {
		syscall.SetNonblock(fd, true)
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | -syscall.EPOLLET, Fd: int32(fd)}
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			log.Print(err)
			return
		}
	}
	events := make([]syscall.EpollEvent, 2)
	buf := make([]byte, 16<<10)
	for {
		n, err := syscall.EpollWait(ep, events, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			log.Print(err)
			return
		}
		for _, ev := range events[:n] {
			from, to := cfd, sfd
			if int(ev.Fd) == sfd {
				from, to = sfd, cfd
			}
			// Edge-triggered: read until a read comes short (as nutcracker
			// does), which leaves the socket empty.
			for {
				m, err := syscall.Read(from, buf)
				if err == syscall.EAGAIN {
					break
				}
				if m <= 0 {
					return
				}
				if !writeAll(to, buf[:m]) {
					return
				}
				if m < len(buf) {
					break
				}
			}
		}
	}
}

// writeAll writes p to fd, waiting for room as a blocking write would; it
// reports whether it wrote it all.
func writeAll(fd int, p []byte) bool {
	for len(p) > 0 {
		n, err := syscall.Write(fd, p)
		switch {
		case err == syscall.EAGAIN && fd < syscall.FD_SETSIZE:
			var fds syscall.FdSet
			fds.Bits[fd/64] |= 1 << (uint(fd) % 64)
			syscall.Select(fd+1, nil, &fds, nil, nil)
		case err == syscall.EAGAIN:
			runtime.Gosched()
		case err != nil:
			return false
		default:
			p = p[n:]
		}
	}
	return true
}
