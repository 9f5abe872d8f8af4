package membership

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// noPoll makes a file source rely on its directory's notifications alone,
// and wait long enough between its two reads that a writer's few writes are
// done.
func noPoll(c *Config) {
	c.PollInterval = time.Hour
	c.Settle = 100 * time.Millisecond
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replace writes path as configuration tools do: a new file renamed over
// the old one.
func replace(t *testing.T, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	write(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestFileChanges changes a file by rename, by writing it in place and by
// appending, with polling off: the directory's notifications bring each.
func TestFileChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "servers")
	write(t, path, "# cache\n10.0.0.1:11211:1 a\n")
	w := openWith(t, "file:"+path, noPoll)
	if l := w.s.List(); names(l.Servers) != "a/1" || l.Revision != 1 || l.Servers[0].Line != 2 {
		t.Fatalf("Open's list: %+v; want a/1 on line 2 at revision 1", l)
	}

	replace(t, path, "10.0.0.1:11211:1 a\n10.0.0.2:11211:1 b\n")
	w.expect("a/1 b/1", 2)
	write(t, path, "10.0.0.2:11211:3 b\n10.0.0.1:11211:1 a\n") // truncated, then written
	w.expect("b/3 a/1", 3)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("10.0.0.3:11211:1 c\n")
	f.Close()
	w.expect("b/3 a/1 c/1", 4)

	// Comments and blank lines change the file but not the list: nothing
	// is applied, and the revision moves on.
	replace(t, path, "10.0.0.2:11211:3 b # big\n\n10.0.0.1:11211:1 a\n10.0.0.3:11211:1 c\n")
	w.until("revision 5", func(st Status) bool { return st.Revision == 5 })
	w.none(200 * time.Millisecond)
	replace(t, path, "")
	w.expect("", 6)
}

// TestFileDeleted deletes the file: the source keeps its list, says once that
// the file is gone, and takes the file that comes back.
func TestFileDeleted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "servers")
	write(t, path, "10.0.0.1:11211:1 a\n")
	w := openWith(t, "file:"+path, func(c *Config) { c.PollInterval = 50 * time.Millisecond })

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	st := w.until("disconnected", func(st Status) bool { return !st.Connected })
	if !strings.Contains(st.LastError, "no such file") {
		t.Errorf("last error %q; want it to say the file is missing", st.LastError)
	}
	w.until("retrying", func(st Status) bool { return st.Errors >= 3 })
	w.none(0)
	if l := w.s.List(); names(l.Servers) != "a/1" {
		t.Errorf("with the file gone List() = %q; want a/1", names(l.Servers))
	}

	// Back with the same servers: nothing to apply.
	write(t, path, "10.0.0.1:11211:1 a\n")
	w.until("connected", func(st Status) bool { return st.Connected })
	w.none(200 * time.Millisecond)
	if lost, back := count(w.logs, "source unreachable"), count(w.logs, "source reachable again"); lost != 1 || back != 1 {
		t.Errorf("logged %d losses and %d returns of the file; want 1 each:\n%s", lost, back, w.logs)
	}

	os.Remove(path)
	w.until("disconnected", func(st Status) bool { return !st.Connected })
	replace(t, path, "10.0.0.2:11211:1 b\n")
	w.expect("b/1", 0)
}

// TestFileRefused writes a file with a bad line, then one with a name twice:
// both are refused with the file and line, and the fix is applied.
func TestFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "servers")
	write(t, path, "10.0.0.1:11211:1 a\n")
	w := openWith(t, "file:"+path, noPoll)

	replace(t, path, "10.0.0.1:11211:1 a\n- 10.0.0.2:11211:1 b\n")
	st := w.until("refused", func(st Status) bool { return st.Refused == 1 })
	if want := path + `:2: server "- 10.0.0.2:11211:1 b": a line of servers has no "- " before it`; !strings.Contains(st.LastError, want) {
		t.Errorf("last error %q; want it to contain %q", st.LastError, want)
	}
	replace(t, path, "10.0.0.1:11211:1 a\n10.0.0.2:11211:1 a\n")
	st = w.until("refused twice", func(st Status) bool { return st.Refused == 2 })
	if want := path + `:2: server "10.0.0.2:11211:1 a": name "a" is also the server's on line 1`; !strings.Contains(st.LastError, want) {
		t.Errorf("last error %q; want it to contain %q", st.LastError, want)
	}
	if l := w.s.List(); names(l.Servers) != "a/1" || l.Revision != 1 {
		t.Errorf("after refusals List() = %q at %d; want a/1 at 1", names(l.Servers), l.Revision)
	}
	replace(t, path, "10.0.0.1:11211:1 a\n10.0.0.2:11211:1 b\n")
	w.expect("a/1 b/1", 4)
}

// TestFileLinkSwap updates the file as Kubernetes updates a mounted
// ConfigMap: the file is a link through "..data", a link to a directory of
// the files, which is swapped for a link to a new directory. The event names
// "..data", not the file.
func TestFileLinkSwap(t *testing.T) {
	dir := t.TempDir()
	version := func(name, servers string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, name, "servers"), servers)
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..v1", "10.0.0.1:11211:1 a\n")
	path := filepath.Join(dir, "servers")
	if err := os.Symlink(filepath.Join("..data", "servers"), path); err != nil {
		t.Fatal(err)
	}
	w := openWith(t, "file:"+path, noPoll)
	version("..v2", "10.0.0.1:11211:1 a\n10.0.0.2:11211:1 b\n")
	w.expect("a/1 b/1", 2)
}

// TestFileDirectoryRecreated removes the file's directory, which ends its
// watch, and makes it again: polling finds the file, and the directory is
// watched again.
func TestFileDirectoryRecreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	os.Mkdir(dir, 0o755)
	path := filepath.Join(dir, "servers")
	write(t, path, "10.0.0.1:11211:1 a\n")
	w := openWith(t, "file:"+path, func(c *Config) { c.PollInterval = 50 * time.Millisecond })
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	w.until("disconnected", func(st Status) bool { return !st.Connected })
	os.Mkdir(dir, 0o755)
	write(t, path, "10.0.0.2:11211:1 b\n")
	w.expect("b/1", 2)
	w.until("the directory watched again", func(Status) bool { return strings.Contains(w.logs.String(), "watching the file's directory again") })
	replace(t, path, "10.0.0.3:11211:1 c\n")
	w.expect("c/1", 3)
}

func TestFileOpenErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	write(t, bad, "10.0.0.1:11211:1 a\n\n10.0.0.2:11211 b\n")
	tests := []struct{ url, want string }{
		{"file:" + filepath.Join(dir, "missing"), "membership: file:" + filepath.Join(dir, "missing") + ": open " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{"file:" + bad, "membership: " + bad + `:3: server "10.0.0.2:11211 b": want "host:port:weight [name]"`},
		{"file:" + dir, "is a directory"},
	}
	for _, tt := range tests {
		_, err := Open(context.Background(), tt.url, Config{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%q): %v; want an error containing %q", tt.url, err, tt.want)
		}
		_, err = Read(context.Background(), tt.url)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Read(%q): %v; want an error containing %q", tt.url, err, tt.want)
		}
	}
}

func TestFileRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "servers")
	write(t, path, "10.0.0.1:11211:1 a\n10.0.0.2:11211:2\n")
	got, err := Read(context.Background(), "file:"+path)
	if err != nil || names(got) != "a/1 10.0.0.2:11211/2" {
		t.Fatalf("Read = %q, %v; want %q", names(got), err, "a/1 10.0.0.2:11211/2")
	}
}

// TestRunTwiceAndAfterClose: one Run at a time, and none after Close.
func TestRunTwiceAndAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "servers")
	write(t, path, "10.0.0.1:11211:1 a\n")
	w := open(t, "file:"+path)
	// A change applied proves Run is under way. (Probing its mutex with
	// TryLock instead could make Run itself see a second Run and return.)
	write(t, path, "10.0.0.1:11211:1 a\n10.0.0.2:11211:1 b\n")
	w.expect("a/1 b/1", 0)
	if err := w.s.Run(context.Background(), w.apply); err == nil || !strings.Contains(err.Error(), "Run called twice") {
		t.Errorf("a second Run: %v; want an error", err)
	}
	s, err := Open(context.Background(), "file:"+path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.Run(context.Background(), w.apply); err == nil || !strings.Contains(err.Error(), "Run after Close") {
		t.Errorf("Run after Close: %v; want an error", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}
