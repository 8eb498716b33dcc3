// Package canon writes JSON in one canonical form, so that two encodings of
// the same value — keys in another order, other white space, 1.0 for 1,
// \u0041 for A — give the same bytes and the same digest.
//
// Request state is bound to a digest of the original arguments, and
// idempotency claims are fingerprinted by one; a client that re-serialises
// its arguments between retries must not be taken for a different request.
//
// The form, after RFC 8785: objects with keys sorted by their UTF-16 code
// units, no insignificant white space, strings as encoding/json writes
// them without HTML escaping, and every number as its float64 value —
// integers below 10^21 in full, others in the shortest form that parses
// back to the same float64 — because that is what a JavaScript or Python
// client re-serialises: 12345678901234567890 comes back as
// 12345678901234567000 and is the same argument. Only numbers beyond
// float64's range keep their literal text (no JSON peer holds them as
// numbers).
package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Append appends the canonical form of the JSON value in src to dst.
// Absent and null arguments are the empty object: a tool call without
// arguments and one with {} are the same call.
func Append(dst, src []byte) ([]byte, error) {
	src = bytes.Trim(src, " \t\r\n")
	if len(src) == 0 || string(src) == "null" {
		return append(dst, "{}"...), nil
	}
	d := json.NewDecoder(bytes.NewReader(src))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("canon: %w", err)
	}
	if len(bytes.Trim(src[d.InputOffset():], " \t\r\n")) > 0 {
		return nil, fmt.Errorf("canon: trailing data after the JSON value")
	}
	return appendValue(dst, v)
}

// Digest returns the SHA-256 of the canonical form of src. Input that is
// not JSON is digested as it is, prefixed so that it cannot collide with a
// canonical encoding.
func Digest(src []byte) [32]byte {
	b, err := Append(make([]byte, 0, len(src)+2), src)
	if err != nil {
		return sha256.Sum256(append([]byte("\x00raw\x00"), src...))
	}
	return sha256.Sum256(b)
}

func appendValue(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case string:
		return appendString(dst, x), nil
	case json.Number:
		return appendNumber(dst, string(x))
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendValue(dst, x[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	}
	return nil, fmt.Errorf("canon: unexpected %T", v)
}

func appendString(dst []byte, s string) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}

func appendNumber(dst []byte, lit string) ([]byte, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		// Beyond float64's range: no JSON peer can hold it as a number,
		// so keep the literal, in one spelling of its exponent.
		lit = strings.Replace(strings.ToLower(lit), "e+", "e", 1)
		return append(dst, lit...), nil
	}
	if f == 0 {
		return append(dst, '0'), nil // -0 too
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64), nil
	}
	return appendExp(dst, strconv.FormatFloat(f, 'g', -1, 64)), nil
}

// appendExp appends a formatted float with its exponent written as
// ECMAScript does: 1e-7, 1e21 (Go writes 1e-07, 1e+21).
func appendExp(dst []byte, s string) []byte {
	i := strings.IndexByte(s, 'e')
	if i < 0 {
		return append(dst, s...)
	}
	dst = append(dst, s[:i+1]...)
	exp := s[i+1:]
	if exp[0] == '-' {
		dst = append(dst, '-')
	}
	return append(dst, strings.TrimLeft(exp, "+-0")...)
}

func compareUTF16(a, b string) int {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}
