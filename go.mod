module github.com/chash-dev/chash

go 1.26

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)
