package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, yaml string) string {
	path := filepath.Join(t.TempDir(), "nutcracker.yml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProxyTestConf checks --test-conf, which validates like nutcracker -t.
func TestProxyTestConf(t *testing.T) {
	good := writeConfig(t, "alpha:\n  listen: 127.0.0.1:22121\n  servers:\n   - 127.0.0.1:11211:1\n")
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"--config", good, "--test-conf"}, 0, "syntax is ok", ""},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  bogus: 1\n  servers:\n   - 127.0.0.1:11211:1\n"), "--test-conf"}, 2, "", `unknown key "bogus"`},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  redis: true\n  redis_auth: pw\n  redis_db: 2\n  servers:\n   - 127.0.0.1:6379:1\n"), "--test-conf"}, 0, "syntax is ok", ""},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  redis: true\n  redis_db: -1\n  servers:\n   - 127.0.0.1:6379:1\n"), "--test-conf"}, 2, "", `redis_db "-1" is not a number`},
		{[]string{"--config", writeConfig(t, "alpha:\n  servers:\n   - 127.0.0.1:11211:1\n"), "--test-conf"}, 2, "", "no listen address"},
		{[]string{"--config", filepath.Join(t.TempDir(), "missing.yml"), "--test-conf"}, 2, "", "no such file"},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  tls_cert_file: /nonexistent/c.pem\n  tls_key_file: /nonexistent/k.pem\n  servers:\n   - 127.0.0.1:11211:1\n"), "--test-conf"}, 2, "", `:3: pool "alpha": tls_cert_file "/nonexistent/c.pem", tls_key_file "/nonexistent/k.pem": open /nonexistent/c.pem: no such file`},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  eject_errors: true\n  servers:\n   - 127.0.0.1:11211:1\n"), "--test-conf"}, 2, "", `:3: pool "alpha": eject_errors: true needs auto_eject_hosts: true`},
		// A servers_from URL is checked, its list not read (etcd may be out of reach).
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  servers_from: file:/nonexistent/cache.servers\n"), "--test-conf"}, 0, "syntax is ok", ""},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  servers_from: etcd://127.0.0.1:1/chash\n"), "--test-conf"}, 2, "", `:3: pool "alpha": membership: servers_from "etcd://127.0.0.1:1/chash": key prefix "/chash" does not end in "/"`},
		{[]string{"--config", writeConfig(t, "alpha:\n  listen: 127.0.0.1:1\n  servers_from: file:/x\n  servers: [127.0.0.1:11211:1]\n"), "--test-conf"}, 2, "", "servers_from and servers (line 4) both given"},
		{[]string{"--test-conf"}, 2, "", "--test-conf needs --config"},
		{[]string{"--config", good, "extra"}, 2, "", "unexpected arguments"},
		{[]string{"--config", good, "--tls-cert", "x"}, 2, "", "go together"},
		{[]string{"--config", good, "--max-memory", "0"}, 2, "", "--max-memory 0: want a positive number of bytes"},
		{[]string{"--config", good, "--max-bulk", "0"}, 2, "", "--max-bulk 0: want positive numbers of bytes"},
	}
	for _, tt := range tests {
		args := append([]string{"proxy"}, tt.args...)
		stdout, stderr, code := runChash(t, nil, args...)
		if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("chash %q = %d\n%s%s\nwant %d, output with %q and %q", args, code, stdout, stderr, tt.code, tt.stdout, tt.stderr)
		}
	}
}
