module github.com/chash-dev/chash/compat/testdata/gen

go 1.26.0

require (
	github.com/chash-dev/chash v0.0.0
	github.com/golang/groupcache v0.0.0-20241129210726-2c02b8208cf8
	stathat.com/c/consistent v1.0.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)

replace github.com/chash-dev/chash => ../../..
