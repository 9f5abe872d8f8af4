package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
)

// eachLine calls f with each line of r, without its trailing "\n" or "\r\n",
// however long. Before it waits for more input it flushes w, so that routing
// typed keys answers each at once while piped keys are written in large blocks.
func eachLine(r io.Reader, w *bufio.Writer, f func(line []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		if br.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return err
		}
		if len(line) > 0 {
			if bytes.HasSuffix(line, []byte("\n")) {
				line = line[:len(line)-1]
				line = bytes.TrimSuffix(line, []byte("\r"))
			}
			if ferr := f(line); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// keyFile opens the key file at path, "-" for standard input, and returns its
// lines as chash route reads them, and a function that returns the error that
// ended the reading, if any, once the lines are used.
func keyFile(env *Env, path string) (lines iter.Seq[[]byte], readErr func() error, err error) {
	var in io.Reader = env.Stdin
	var closeFile func() error
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		in, closeFile = f, f.Close
	}
	var failed error
	lines = func(yield func([]byte) bool) {
		stop := errors.New("stop")
		err := eachLine(in, bufio.NewWriter(io.Discard), func(line []byte) error {
			if !yield(line) {
				return stop
			}
			return nil
		})
		if err != nil && err != stop {
			failed = fmt.Errorf("reading %s: %w", path, err)
		}
		if closeFile != nil {
			closeFile()
		}
	}
	return lines, func() error { return failed }, nil
}

// readKeys returns the lines of the key file at path ("-" for standard input).
func readKeys(env *Env, path string) ([][]byte, error) {
	lines, readErr, err := keyFile(env, path)
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for k := range lines {
		keys = append(keys, slices.Clone(k))
	}
	return keys, readErr()
}
