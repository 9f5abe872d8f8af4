module github.com/chash-dev/chash/benchmarks

go 1.26.0

replace github.com/chash-dev/chash => ../

require (
	github.com/buraksezer/consistent v0.10.0
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/chash-dev/chash v0.0.0-00010101000000-000000000000
	github.com/dgryski/go-jump v0.0.0-20170409065014-e1f439676b57
	github.com/dgryski/go-maglev v0.0.0-20200611225407-8961b9b1b8e6
	github.com/golang/groupcache v0.0.0-20241129210726-2c02b8208cf8
	github.com/lafikl/consistent v0.0.0-20220512074542-bdd3606bfc3e
	github.com/serialx/hashring v0.0.0-20200727003509-22c0c7ab6b1b
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
	stathat.com/c/consistent v1.0.0
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/dchest/siphash v1.2.3 // indirect
	github.com/minio/blake2b-simd v0.0.0-20160723061019-3f5f724cb5b1 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)
