package stateless

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// MetaReplay is the result _meta key that marks a replayed result: the
// tool did not run again, and this is the result of the call that did.
const MetaReplay = "io.github.serverless-mcp/replay"

// MetaIdempotency is the key, in server capabilities' extensions and in a
// tool's _meta, that advertises idempotent calls.
const MetaIdempotency = "io.github.serverless-mcp/idempotency"

// replayMember is MetaReplay's member as the server writes it.
const replayMember = `"` + MetaReplay + `":true`

// replayForm is the result as a replay answers it, marked with
// MetaReplay: what a claim stores, so that a replay sends it as it is.
func (r encodedResult) replayForm() []byte {
	o := r.obj
	out := make([]byte, 0, len(o)+len(replayMember)+len(`,"_meta":{}`))
	if r.metaAt < 0 {
		// No _meta: add one before the closing brace.
		out = append(out, o[:len(o)-1]...)
		if len(bytes.TrimSpace(o[1:len(o)-1])) > 0 {
			out = append(out, ',')
		}
		out = append(out, `"_meta":{`+replayMember+`}}`...)
		return out
	}
	out = append(out, o[:r.metaAt]...)
	out = append(out, replayMember...)
	if o[r.metaAt] != '}' {
		out = append(out, ',')
	}
	return append(out, o[r.metaAt:]...)
}

// markedReplay returns a stored result marked as a replay: as stored, when
// it was stored in its replay form; else (a record written before the
// replay form was stored) decoded and marked.
func markedReplay(stored json.RawMessage) (json.RawMessage, error) {
	if bytes.Contains(stored, []byte(replayMember)) {
		return stored, nil
	}
	return markReplay(stored)
}

// markReplay adds MetaReplay to a stored result object.
func markReplay(result json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := jsonv2.Unmarshal(result, &obj); err != nil {
		return nil, err
	}
	meta := map[string]json.RawMessage{}
	if m, ok := obj["_meta"]; ok {
		if err := jsonv2.Unmarshal(m, &meta); err != nil {
			return nil, err
		}
	}
	meta[MetaReplay] = json.RawMessage("true")
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	obj["_meta"] = b
	return json.Marshal(obj)
}

// MaxIdempotencyKeyBytes is the length limit of an idempotency key, in
// bytes of its UTF-8 form (after decoding the header's base64 form).
const MaxIdempotencyKeyBytes = 255

// Why an idempotency key was refused, sent as data.reason with
// [mcperr.KindBadIdempotencyKey]. Fixed words: the key itself is never sent
// back.
const (
	keyNotAString      = "not_a_string"     // params.idempotencyKey is null, a number, an object…
	keyEmpty           = "empty"            // "", or a header with nothing in it
	keyTooLong         = "too_long"         // over MaxIdempotencyKeyBytes
	keyNotPrintable    = "not_printable"    // a control, format or non-ASCII space character, or not UTF-8
	keyMalformedHeader = "malformed_header" // a base64 form that does not decode, or a control character
	keyRepeatedHeader  = "repeated_header"  // Idempotency-Key values that differ
	keyMismatch        = "mismatch"         // params.idempotencyKey and the header differ
)

// idempotencyKey reads a tools/call's idempotency key from
// params.idempotencyKey (raw, nil when absent) and the Idempotency-Key
// header. It returns "" when the call carries no key, and a refusal when
// the key is unusable: a key the server cannot read, or two it cannot
// choose between, must not be dropped, for the call would then run
// unclaimed.
//
// A key is 1 to MaxIdempotencyKeyBytes bytes of UTF-8, every character of
// it printable (a letter, mark, number, punctuation, symbol or the ASCII
// space). The header carries it in the encoding of the MCP headers: white
// space around it trimmed, or the =?base64?...?= form, padded, of its
// UTF-8 bytes. The header is a single value. Lines repeated with the same
// value are one value; since HTTP allows repeated lines to be joined with
// commas, as API Gateway's HTTP API and function URLs do, a comma in the
// plain form separates values too, and a key with a comma travels in the
// base64 form or in params. When params and the header both carry a key
// they must be equal.
func idempotencyKey(raw json.RawMessage, hdr http.Header) (string, *mcperr.Error) {
	var key string
	if raw != nil {
		s, ok := jsonString(raw)
		if !ok {
			return "", mcperr.NewBadIdempotencyKey(keyNotAString)
		}
		if !utf8.Valid(raw) {
			// The decoder would have replaced the bytes with U+FFFD.
			return "", mcperr.NewBadIdempotencyKey(keyNotPrintable)
		}
		if r := checkKey(s); r != "" {
			return "", mcperr.NewBadIdempotencyKey(r)
		}
		key = s
	}
	lines := hdr.Values(headerIdempotencyKey)
	if len(lines) == 0 {
		return key, nil
	}
	h, r := keyHeader(lines)
	if r == "" {
		r = checkKey(h)
	}
	if r == "" && raw != nil && h != key {
		r = keyMismatch
	}
	if r != "" {
		return "", mcperr.NewBadIdempotencyKey(r)
	}
	return h, nil
}

// keyHeader decodes the Idempotency-Key header's lines into one value, or
// says why it cannot.
func keyHeader(lines []string) (string, string) {
	var key string
	n := 0
	for _, line := range lines {
		for elem := range strings.SplitSeq(line, ",") {
			v, ok := decodeHeaderValue(elem)
			if !ok {
				return "", keyMalformedHeader
			}
			if n > 0 && v != key {
				return "", keyRepeatedHeader
			}
			key, n = v, n+1
		}
	}
	return key, ""
}

// checkKey returns why key is not a usable idempotency key, or "".
func checkKey(key string) string {
	switch {
	case key == "":
		return keyEmpty
	case len(key) > MaxIdempotencyKeyBytes:
		return keyTooLong
	case !utf8.ValidString(key):
		return keyNotPrintable
	}
	for _, r := range key {
		if !unicode.IsPrint(r) {
			return keyNotPrintable
		}
	}
	return ""
}
