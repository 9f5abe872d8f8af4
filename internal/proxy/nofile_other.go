//go:build !unix

package proxy

// openFilesLimit cannot be read here: the proxy takes clients until accept
// fails.
func openFilesLimit() int64 { return 0 }
