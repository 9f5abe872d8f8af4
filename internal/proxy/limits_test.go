package proxy

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"testing"
	"time"
)

func TestClientConnectionsCap(t *testing.T) {
	s := startMemcached(t)
	p := startProxy(t, poolYAML("client_connections: 2", s))
	addr := p.Addr("alpha").String()
	a, b := dial(t, addr), dial(t, addr)
	a.mustDo("get x\r\n")
	b.mustDo("get x\r\n")
	c := dial(t, addr)
	if got, err := c.do("get x\r\n"); err == nil {
		t.Errorf("third client of two allowed: %q", got)
	}
	a.c.Close()
	pl := p.pools["alpha"]
	waitFor(2*time.Second, func() bool { return pl.nconns.Load() < 2 })
	d := dial(t, addr)
	if got := d.mustDo("get x\r\n"); got != "END\r\n" {
		t.Errorf("client after one left: %q", got)
	}
}

func TestIdleTimeout(t *testing.T) {
	s := startMemcached(t)
	p := startProxy(t, poolYAML("", s), func(p *Proxy) { p.IdleTimeout = 100 * time.Millisecond })
	c := dial(t, p.Addr("alpha").String())
	c.mustDo("get x\r\n")
	time.Sleep(300 * time.Millisecond)
	c.c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.br.ReadByte(); err != io.EOF {
		t.Errorf("idle client: read %v; want io.EOF", err)
	}
}

func TestTLS(t *testing.T) {
	s := startMemcached(t)
	cert := selfSigned(t)
	p := startProxy(t, poolYAML("", s), func(p *Proxy) {
		p.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	})
	raw, err := tls.Dial("tcp", p.Addr("alpha").String(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c := &conn{t: t, c: raw, br: bufio.NewReader(raw)}
	if got := c.mustDo("set a 0 0 1\r\nx\r\nget a\r\n"); got != "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n" {
		t.Errorf("over TLS: %q", got)
	}
}

func selfSigned(t *testing.T) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestPreconnect(t *testing.T) {
	s := startMemcached(t)
	p := startProxy(t, poolYAML("preconnect: true\nserver_connections: 3", s))
	srv := p.pools["alpha"].state.Load().servers[s.addr()]
	if !waitFor(2*time.Second, func() bool { return srv.stats.connections.Load() == 3 }) {
		t.Errorf("%d connections after preconnect; want 3", srv.stats.connections.Load())
	}
}
