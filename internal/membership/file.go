package membership

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// fileKind is a source that reads a file of server lines, again whenever its
// directory reports a change and every PollInterval.
//
// It watches the directory, not the file: tools that write a new file and
// rename it over the old one, and Kubernetes, which swaps a symbolic link to
// a directory of files, replace the file the watch would follow. Any event in
// the directory leads to a read (at most one per Settle), since the event of
// a swapped link names the link, not the file; reading a file of servers is
// cheap. Polling as well covers file systems that report no events.
type fileKind struct {
	url  *URL
	cfg  Config
	last []byte // the file as last read, valid or not
	rev  int64  // the number of different contents read
}

func newFileKind(u *URL, cfg Config) *fileKind {
	return &fileKind{url: u, cfg: cfg}
}

func (f *fileKind) close() error { return nil }

func (f *fileKind) first(_ context.Context, s *Source) (List, error) {
	data, err := os.ReadFile(f.url.Path)
	if err != nil {
		return List{}, fmt.Errorf("membership: %s: %w", f.url, err)
	}
	f.last, f.rev = data, 1
	servers, err := parseFile(f.url.Path, data)
	return List{Servers: servers, Revision: f.rev}, err
}

func (f *fileKind) watch(ctx context.Context, s *Source, apply func(List) error) {
	dir := filepath.Dir(f.url.Path)
	var events <-chan fsnotify.Event
	var errs <-chan error
	w, err := fsnotify.NewWatcher()
	if err == nil {
		defer w.Close()
		events, errs = w.Events, w.Errors
		err = w.Add(dir)
	}
	if err != nil {
		s.log.Warn("membership: no change notifications for the file's directory; polling it", "every", f.cfg.PollInterval, "err", err)
	}
	poll := time.NewTicker(f.cfg.PollInterval)
	defer poll.Stop()
	settle := time.NewTimer(0) // a first read at once: the file may have changed since Open
	armed := true
	arm := func() {
		if !armed {
			settle.Reset(f.cfg.Settle)
			armed = true
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-events:
			arm()
		case err := <-errs:
			// An overflowed event queue lost events: read to be sure.
			s.log.Debug("membership: file notifications", "err", err)
			arm()
		case <-poll.C:
			if w != nil && len(w.WatchList()) == 0 {
				// The directory was removed, which ends its watch; watch it
				// again once it is back.
				if w.Add(dir) == nil {
					s.log.Info("membership: watching the file's directory again", "dir", dir)
				}
			}
			arm()
		case <-settle.C:
			armed = false
			if !f.check(ctx, s, apply) {
				arm()
			}
		}
	}
}

// check reads the file and offers its list if it changed. It reports false
// if the file was still being written, to be read again after Settle.
func (f *fileKind) check(ctx context.Context, s *Source, apply func(List) error) bool {
	data, err := os.ReadFile(f.url.Path)
	if err != nil {
		s.unreachable(fmt.Errorf("membership: %s: %w", f.url, err))
		return true
	}
	if bytes.Equal(data, f.last) {
		s.reachable()
		return true
	}
	// A writer that rewrites the file in place may not be done: take the
	// content only if a second read, Settle later, agrees.
	t := time.NewTimer(f.cfg.Settle)
	select {
	case <-ctx.Done():
		t.Stop()
		return true
	case <-t.C:
	}
	again, err := os.ReadFile(f.url.Path)
	if err != nil || !bytes.Equal(data, again) {
		return false
	}
	s.reachable()
	f.last = data
	f.rev++
	servers, err := parseFile(f.url.Path, data)
	s.offer(List{Servers: servers, Revision: f.rev}, err, apply)
	return true
}
