//go:build bench_link_jsonschema

package main

// The bare-jsonschema subject of bench/coldstart links github.com/google/jsonschema-go/jsonschema
// too, using nothing of it: what that package's initialization alone adds
// to a cold start (what a function on pkg/stateless pays when it sets
// pkg/toolschema's engine, built on it, for schemas beyond flat ones).
import _ "github.com/google/jsonschema-go/jsonschema"
