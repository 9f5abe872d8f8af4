package main

import (
	"os"
	"sync"
)

// logFile is the --output file of chash proxy, which SIGHUP opens again, as
// nutcracker's SIGHUP does: logrotate renames the file and creates an empty
// one (create, in Debian's /etc/logrotate.d/nutcracker), then signals, and
// the log goes on in the new file. copytruncate needs no signal: the file is
// appended to.
type logFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func openLogFile(path string) (*logFile, error) {
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	return &logFile{path: path, f: f}, nil
}

func openAppend(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}

// Write writes one log record: slog's handlers write each in one call.
func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// reopen opens the file's path again and logs to it from then on; if it
// cannot, the log stays in the file open before.
func (l *logFile) reopen() error {
	f, err := openAppend(l.path)
	if err != nil {
		return err
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	return old.Close()
}

func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
