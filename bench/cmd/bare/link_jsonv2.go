//go:build bench_link_jsonv2

package main

// The bare-jsonv2 subject of bench/coldstart links github.com/go-json-experiment/json
// too, using nothing of it: what that package's initialization alone adds
// to a cold start (the core links it).
import _ "github.com/go-json-experiment/json"
