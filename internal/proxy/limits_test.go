package proxy

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chash-dev/chash/internal/memcachedtest"
	"github.com/chash-dev/chash/internal/testprog"
)

func TestClientConnectionsCap(t *testing.T) {
	s := memcachedtest.Start(t)
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
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("", s), func(p *Proxy) { p.IdleTimeout = 100 * time.Millisecond })
	c := dial(t, p.Addr("alpha").String())
	c.mustDo("get x\r\n")
	time.Sleep(300 * time.Millisecond)
	c.c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.br.ReadByte(); err != io.EOF {
		t.Errorf("idle client: read %v; want io.EOF", err)
	}
}

// TestIdleTimeoutFirst: the idle timeout runs from a connection's start, so
// that clients that never finish a request (one that sends nothing, a line
// without its end, a set whose value stops) are closed as an idle client
// is; the proxy then holds no goroutine for them.
func TestIdleTimeoutFirst(t *testing.T) {
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("", s), func(p *Proxy) { p.IdleTimeout = 200 * time.Millisecond })
	addr := p.Addr("alpha").String()
	for _, sent := range []string{"", "get abc", "set sl 0 0 100000\r\n" + strings.Repeat("x", 500)} {
		c := dial(t, addr)
		if _, err := io.WriteString(c.c, sent); err != nil {
			t.Fatal(err)
		}
		c.c.SetReadDeadline(time.Now().Add(3 * time.Second))
		start := time.Now()
		if b, err := c.br.ReadByte(); err != io.EOF {
			t.Errorf("client that sent %.20q: read %q, %v after %v; want io.EOF (closed when idle 200ms)", sent, b, err, time.Since(start).Round(time.Millisecond))
		}
	}
	pl := p.pools["alpha"]
	if !waitFor(2*time.Second, func() bool { return pl.nconns.Load() == 0 }) {
		t.Errorf("%d client connections; want 0", pl.nconns.Load())
	}
}

func TestTLS(t *testing.T) {
	s := memcachedtest.Start(t)
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

// TestPoolIdleTimeout checks client_idle_timeout against the proxy's default,
// and that a reload changes it for clients already connected.
func TestPoolIdleTimeout(t *testing.T) {
	s := memcachedtest.Start(t)
	pools := map[string]string{
		"dflt": poolYAML("", s),
		"kept": poolYAML("client_idle_timeout: 0", s),
	}
	p := startProxy(t, poolsYAML(pools), func(p *Proxy) { p.IdleTimeout = 100 * time.Millisecond })
	dflt, kept := dial(t, p.Addr("dflt").String()), dial(t, p.Addr("kept").String())
	dflt.mustDo("get x\r\n")
	kept.mustDo("get x\r\n")
	time.Sleep(300 * time.Millisecond)
	if got, err := dflt.do("get x\r\n"); err == nil {
		t.Errorf("client idle past the default timeout: %q; want the connection closed", got)
	}
	kept.mustDo("get x\r\n")

	pools["kept"] = poolYAML("client_idle_timeout: 100", s)
	if err := p.Reload(parseConfig(t, poolsYAML(pools))); err != nil {
		t.Fatal(err)
	}
	kept.mustDo("get x\r\n") // waits with the new timeout
	time.Sleep(300 * time.Millisecond)
	if got, err := kept.do("get x\r\n"); err == nil {
		t.Errorf("client idle past client_idle_timeout after a reload: %q; want the connection closed", got)
	}
}

// TestPoolTLS checks tls_cert_file and tls_key_file: the pool that sets them
// serves TLS, the other plain text; a reload that keeps the files reads them
// again without closing clients; and files that do not load are refused with
// the file, line and pool.
func TestPoolTLS(t *testing.T) {
	s := memcachedtest.Start(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, certFile, keyFile)
	tlsKeys := "tls_cert_file: " + certFile + "\ntls_key_file: " + keyFile
	yaml := poolsYAML(map[string]string{"plain": poolYAML("", s), "secure": poolYAML(tlsKeys, s)})
	var logs testprog.Buffer
	p := startProxy(t, yaml, func(p *Proxy) { p.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	const req, want = "set a 0 0 1\r\nx\r\nget a\r\n", "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n"
	if got := dial(t, p.Addr("plain").String()).mustDo(req); got != want {
		t.Errorf("plain pool: %q", got)
	}
	c, peer := dialTLS(t, p.Addr("secure").String())
	if got := c.mustDo(req); got != want {
		t.Errorf("TLS pool: %q", got)
	}

	// A renewed certificate under the same names: new clients get it, the
	// client already connected stays.
	writeCert(t, certFile, keyFile)
	if err := p.Reload(parseConfig(t, yaml)); err != nil {
		t.Fatal(err)
	}
	if got := c.mustDo(req); got != want {
		t.Errorf("TLS client connected before a reload: %q", got)
	}
	if _, peer2 := dialTLS(t, p.Addr("secure").String()); bytes.Equal(peer2, peer) {
		t.Error("after a reload, the old certificate is served")
	}
	// One line for the new certificate; none for a reload of the same.
	if err := p.Reload(parseConfig(t, yaml)); err != nil {
		t.Fatal(err)
	}
	if got := jsonLogs(t, &logs, "reload: TLS certificate replaced"); len(got) != 1 || got[0]["pool"] != "secure" || got[0]["not_after"] == "" {
		t.Errorf("certificate reloads logged %v; want one line, for pool secure", got)
	}

	// Files that do not load: Validate and Reload refuse them, naming the file,
	// the line of tls_cert_file and the pool.
	os.WriteFile(keyFile, []byte("not a key"), 0o600)
	f := parseConfig(t, yaml)
	line := f.Pools[1].KeyLine("tls_cert_file")
	wantErr := fmt.Sprintf(`proxy: test.yml:%d: pool "secure": tls_cert_file %q, tls_key_file %q: tls: `, line, certFile, keyFile)
	if err := Validate(f); err == nil || !strings.HasPrefix(err.Error(), wantErr) {
		t.Errorf("Validate with a bad key file: %v; want an error starting %q", err, wantErr)
	}
	if err := p.Reload(f); err == nil {
		t.Error("Reload with a bad key file accepted")
	}
	if got := c.mustDo(req); got != want {
		t.Errorf("TLS client after a refused reload: %q", got)
	}
	missing := filepath.Join(dir, "missing.pem")
	f = parseConfig(t, strings.ReplaceAll(yaml, keyFile, missing))
	if err := Validate(f); err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Validate with a missing key file: %v", err)
	}

	// Without its TLS files the pool restarts, as for a new listen address:
	// its TLS clients are closed, once answered, and it serves plain text.
	if err := p.Reload(parseConfig(t, poolsYAML(map[string]string{"plain": poolYAML("", s), "secure": poolYAML("", s)}))); err != nil {
		t.Fatal(err)
	}
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(c.br); len(got) != 0 || err != nil {
		t.Errorf("TLS client of a pool that dropped TLS: read %q, %v; want the end of the stream", got, err)
	}
	if got := dial(t, p.Addr("secure").String()).mustDo(req); got != want {
		t.Errorf("pool that dropped TLS, in plain text: %q", got)
	}
}

// TestDefaultTLSReload: the proxy's TLS files (chash proxy's --tls-cert and
// --tls-key), which serve every pool without its own, are read again at each
// reload as a pool's own are: a renewed certificate reaches new clients, and
// files that no longer load are refused, the certificate in use kept.
func TestDefaultTLSReload(t *testing.T) {
	s := memcachedtest.Start(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, certFile, keyFile)
	yaml := poolYAML("", s)
	p := startProxy(t, yaml, func(p *Proxy) { p.TLSCertFile, p.TLSKeyFile = certFile, keyFile })
	const req, want = "set a 0 0 1\r\nx\r\nget a\r\n", "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n"
	c, peer := dialTLS(t, p.Addr("alpha").String())
	if got := c.mustDo(req); got != want {
		t.Errorf("TLS pool: %q", got)
	}
	writeCert(t, certFile, keyFile)
	if err := p.Reload(parseConfig(t, yaml)); err != nil {
		t.Fatal(err)
	}
	_, peer2 := dialTLS(t, p.Addr("alpha").String())
	if bytes.Equal(peer2, peer) {
		t.Error("after a reload, the proxy's old default certificate is served")
	}
	if got := c.mustDo(req); got != want {
		t.Errorf("TLS client connected before the reload: %q", got)
	}
	os.WriteFile(certFile, []byte("garbage"), 0o600)
	err := p.Reload(parseConfig(t, yaml))
	if wantErr := fmt.Sprintf("proxy: pool \"alpha\": the proxy's TLS files %q and %q: ", certFile, keyFile); err == nil || !strings.HasPrefix(err.Error(), wantErr) {
		t.Errorf("Reload with the default certificate broken: %v; want an error starting %q", err, wantErr)
	}
	if _, peer3 := dialTLS(t, p.Addr("alpha").String()); !bytes.Equal(peer3, peer2) {
		t.Error("after a refused reload, the certificate served changed")
	}
}

// writeCert writes a new self-signed certificate for 127.0.0.1 and its key in
// PEM.
func writeCert(t *testing.T, certFile, keyFile string) {
	cert := selfSigned(t)
	key, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: key}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// dialTLS connects over TLS and returns the connection and the server's
// certificate.
func dialTLS(t *testing.T, addr string) (*conn, []byte) {
	raw, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return &conn{t: t, c: raw, br: bufio.NewReader(raw)}, raw.ConnectionState().PeerCertificates[0].Raw
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
	s := memcachedtest.Start(t)
	p := startProxy(t, poolYAML("preconnect: true\nserver_connections: 3", s))
	srv := p.pools["alpha"].state.Load().servers[s.Addr]
	if !waitFor(2*time.Second, func() bool { return srv.stats.connections.Load() == 3 }) {
		t.Errorf("%d connections after preconnect; want 3", srv.stats.connections.Load())
	}
}
