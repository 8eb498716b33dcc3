package apigw

import (
	"net/http"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"
)

// paramPrefix is stateless.ParamHeaderPrefix in lower case (a test
// holds it so).
const paramPrefix = "mcp-param-"

// protocolHeader returns the canonical form of lower, a lower-case header
// name, when it is one the server reads (stateless.RequestHeaders) or
// the authorization proxy's (package auth: its cookies, and the fetch
// metadata its consent form checks), else "". An event carries many more
// (user agent, forwarding, tracing); decoding only these keeps a
// request's cost independent of what a gateway adds. It is a switch, not
// a map built from the list, so that a cold start builds nothing; a test
// holds it to stateless.RequestHeaders.
func protocolHeader(lower string) string {
	switch lower {
	case "content-type":
		return "Content-Type"
	case "accept":
		return "Accept"
	case "host":
		return "Host"
	case "origin":
		return "Origin"
	case "mcp-protocol-version":
		return "Mcp-Protocol-Version"
	case "mcp-method":
		return "Mcp-Method"
	case "mcp-name":
		return "Mcp-Name"
	case "idempotency-key":
		return "Idempotency-Key"
	case "authorization":
		return "Authorization"
	case "traceparent":
		return "Traceparent"
	case "access-control-request-method":
		return "Access-Control-Request-Method"
	case "access-control-request-headers":
		return "Access-Control-Request-Headers"
	case "cookie":
		return "Cookie"
	case "sec-fetch-site":
		return "Sec-Fetch-Site"
	}
	return ""
}

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
	if c := protocolHeader(string(l)); c != "" {
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
	// text is the object as one string, made once: single values are
	// substrings of it. vals backs every single-value header's []string.
	// A request's headers then cost two allocations, not two each.
	text string
	vals []string
}

// UnmarshalJSON reads a headers or multiValueHeaders object. b is valid
// JSON: decodeEvent's tokenizer has read it.
func (o *headerObject) UnmarshalJSON(b []byte) error {
	o.text = ""
	var err error
	jsonscan.Members(b, func(name, value []byte) bool {
		if key := canonicalProtocolHeader(name); key != "" {
			start := cap(b) - cap(value) // value is b[start:…]
			err = o.add(key, b, start, start+len(value))
		}
		return err == nil
	})
	return err
}

// add keeps the header key whose value is b[start:end].
func (o *headerObject) add(key string, b []byte, start, end int) error {
	value := b[start:end]
	if o.multi {
		var vs []string
		if err := jsonv2.Unmarshal(value, &vs); err != nil || len(vs) == 0 {
			return err
		}
		o.h[key] = vs
		return nil
	}
	if _, set := o.h[key]; set { // multi-value headers, when present, win
		return nil
	}
	var v string
	if e, escaped := jsonscan.ScanString(value, 0); len(value) > 1 && value[0] == '"' && !escaped && e == len(value) {
		if o.text == "" {
			o.text = string(b)
		}
		v = o.text[start+1 : end-1]
	} else {
		var err error
		if v, err = decodeString(value); err != nil {
			return err
		}
	}
	if o.vals == nil {
		o.vals = make([]string, 0, 8)
	}
	o.vals = append(o.vals, v)
	n := len(o.vals)
	o.h[key] = o.vals[n-1 : n : n]
	return nil
}

// decodeString decodes a JSON string value with escapes (or anything
// else, refused as encoding/json refuses it): the slow path, apart so
// that the fast one keeps its string off the heap.
func decodeString(value []byte) (string, error) {
	var v string
	err := jsonv2.Unmarshal(value, &v)
	return v, err
}
