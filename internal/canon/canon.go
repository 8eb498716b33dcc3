// Package canon writes JSON in the JSON Canonicalization Scheme of
// RFC 8785 (JCS), so that two encodings of the same value — keys in
// another order, other white space, 1.0 for 1, \u0041 for A — give the
// same bytes and the same digest.
//
// Request state is bound to a digest of the original arguments, and
// idempotency claims are fingerprinted by one; a client that re-serialises
// its arguments between retries must not be taken for a different request.
//
// The form is RFC 8785's: objects with members sorted by the UTF-16 code
// units of their names, no insignificant white space, strings with only
// '"', '\\' and the control characters escaped (U+2028 and U+2029 as they
// are), and every number as ECMAScript writes its IEEE 754 double — which
// is what a JavaScript or Python client re-serialises: 12345678901234567890
// comes back as 12345678901234567000 and is the same argument. One
// extension: RFC 8785 has no form for a number beyond the double's range
// (1e400), which it refuses; such a number keeps its literal text, in one
// spelling of its exponent, so that a digest can still be taken.
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

// appendString writes s as RFC 8785 §3.2.2.2 has it: '"' and '\\'
// escaped, control characters as \b \t \n \f \r or \u00xx, everything else
// as it is. s came from the JSON decoder, so it is valid UTF-8.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

func appendNumber(dst []byte, lit string) ([]byte, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		// Beyond the double's range (the one extension of RFC 8785): keep
		// the literal, in one spelling of its exponent.
		lit = strings.Replace(strings.ToLower(lit), "e+", "e", 1)
		return append(dst, lit...), nil
	}
	return appendES(dst, f), nil
}

// appendES writes a finite double as ECMAScript's Number::toString does
// (ECMA-262 §6.1.6.1.20, which RFC 8785 §3.2.2.3 adopts): the shortest
// digits that read back to f, in fixed notation from 1e-7 up to 1e21 and
// in exponent notation ("1e+21", "1.5e-7") beyond.
func appendES(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0') // -0 too
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// d.ddde±x: the shortest digits and the decimal exponent.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	i := strings.IndexByte(e, 'e')
	digits := strings.Replace(e[:i], ".", "", 1)
	x, _ := strconv.Atoi(e[i+1:])
	k, n := len(digits), x+1 // n: where the decimal point goes
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

func compareUTF16(a, b string) int {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}
