//go:build bench_link_jsonschema

package main

// The bare-jsonschema subject of bench/coldstart links github.com/google/jsonschema-go/jsonschema
// too, using nothing of it: what that package's initialization alone adds
// to a cold start (every function on pkg/stateless links it: the core's
// default engine, pkg/toolschema, is built on it).
import _ "github.com/google/jsonschema-go/jsonschema"
