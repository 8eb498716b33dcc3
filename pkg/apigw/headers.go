package apigw

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// protocolHeaders are the request headers the server reads
// (stateless.RequestHeaders), by their lower-case name, with their
// canonical form. An event carries many more (user agent, forwarding,
// tracing); decoding only these keeps a request's cost independent of
// what a gateway adds. Mcp-Param-* headers are kept too. Derived once; never
// changed.
var protocolHeaders = func() map[string]string {
	m := map[string]string{}
	for _, h := range stateless.RequestHeaders() {
		m[strings.ToLower(h)] = h
	}
	return m
}()

// paramPrefix is stateless.ParamHeaderPrefix in lower case.
var paramPrefix = strings.ToLower(stateless.ParamHeaderPrefix)

// canonicalProtocolHeader returns the canonical name of a header the
// endpoint reads, or "" for one it does not.
func canonicalProtocolHeader(name []byte) string {
	var lower [64]byte
	if len(name) > len(lower) {
		return ""
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	l := lower[:len(name)]
	if c, ok := protocolHeaders[string(l)]; ok {
		return c
	}
	if strings.HasPrefix(string(l), paramPrefix) {
		return http.CanonicalHeaderKey(string(name))
	}
	return ""
}

// headerObject decodes an event's headers (single values) or
// multiValueHeaders (arrays of values) into h, keeping the protocol's.
type headerObject struct {
	h     http.Header
	multi bool
}

// UnmarshalJSON implements json.Unmarshaler. encoding/json has checked
// that b is valid JSON.
func (o *headerObject) UnmarshalJSON(b []byte) error {
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil // null
	}
	i = jsonscan.SkipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		end, escaped := jsonscan.ScanString(b, i)
		name := b[i+1 : end-1]
		if escaped {
			var s string
			if err := json.Unmarshal(b[i:end], &s); err != nil {
				return err
			}
			name = []byte(s)
		}
		i = jsonscan.SkipSpace(b, end)
		i = jsonscan.SkipSpace(b, i+1) // ':'
		start := i
		i = jsonscan.SkipValue(b, i)
		if key := canonicalProtocolHeader(name); key != "" {
			if err := o.add(key, b[start:i]); err != nil {
				return err
			}
		}
		i = jsonscan.SkipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = jsonscan.SkipSpace(b, i+1)
		}
	}
	return nil
}

func (o *headerObject) add(key string, value []byte) error {
	if o.multi {
		var vs []string
		if err := json.Unmarshal(value, &vs); err != nil || len(vs) == 0 {
			return err
		}
		o.h[key] = vs
		return nil
	}
	var v string
	if end, escaped := jsonscan.ScanString(value, 0); len(value) > 1 && value[0] == '"' && !escaped && end == len(value) {
		v = string(value[1 : len(value)-1])
	} else if err := json.Unmarshal(value, &v); err != nil {
		return err
	}
	if _, set := o.h[key]; !set { // multi-value headers, when present, win
		o.h[key] = []string{v}
	}
	return nil
}
