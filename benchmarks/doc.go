// Package benchmarks measures chash against peer consistent-hashing libraries in
// one run, so that the ratios between them mean something on a shared, noisy
// machine.
//
// It is a separate module (its go.mod replaces github.com/chash-dev/chash with the
// parent directory) so that the peers, pinned at exact versions, stay out of the
// library's go.mod. The benchmarks are in bench_test.go; run.sh runs them and
// cmd/benchtable turns the output into the table in README.md.
package benchmarks
