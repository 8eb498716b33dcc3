//go:build bench_link_jsonschema

package main

// The bare-jsonschema subject of bench/coldstart links github.com/google/jsonschema-go/jsonschema
// too, using nothing of it: what that package's initialization alone adds
// to a cold start (pkg/toolschema links it; the core does not).
import _ "github.com/google/jsonschema-go/jsonschema"
