// Package costs measures what a call of a function costs in the AWS
// resources it uses, and prices the counts: a metering proxy in front of
// DynamoDB Local that bills each request as DynamoDB bills it (request
// units from the sizes of the items, as DynamoDB computes them), a
// counting proxy for KMS, the dated price table, and the rendering of
// docs/deploy.md's "What it costs" tables. It is a test tool, not part of
// the deployed product.
package costs

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Item is one DynamoDB item in the service's JSON wire form: attribute
// names to attribute values ({"S": "..."}, {"N": "..."}, {"M": {...}} and
// so on).
type Item map[string]json.RawMessage

// ItemSize is an item's size as DynamoDB computes it for its request
// units (DynamoDB developer guide, "DynamoDB item sizes and formats"):
// the sum, over its attributes, of the UTF-8 bytes of the name and the
// value's size, where a string is its UTF-8 bytes, a number 1 byte per
// two significant digits (leading and trailing zeroes trimmed) plus 1, a
// binary its raw bytes, a null or a boolean 1 byte, and a list or a map
// 3 bytes plus its elements, each element 1 byte more (a map's elements
// with their names); a set is the sum of its members.
func ItemSize(it Item) (int, error) {
	n := 0
	for name, raw := range it {
		v, err := valueSize(raw)
		if err != nil {
			return 0, fmt.Errorf("attribute %q: %w", name, err)
		}
		n += len(name) + v
	}
	return n, nil
}

// valueSize is the size of one attribute value in wire form.
func valueSize(raw json.RawMessage) (int, error) {
	var av map[string]json.RawMessage
	if err := json.Unmarshal(raw, &av); err != nil || len(av) != 1 {
		return 0, fmt.Errorf("not an attribute value: %.80s", raw)
	}
	for typ, v := range av {
		switch typ {
		case "S":
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return 0, err
			}
			return len(s), nil
		case "N":
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return 0, err
			}
			return numberSize(s)
		case "B":
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return 0, err
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return 0, err
			}
			return len(b), nil
		case "BOOL", "NULL":
			return 1, nil
		case "SS", "NS", "BS":
			var members []string
			if err := json.Unmarshal(v, &members); err != nil {
				return 0, err
			}
			n := 0
			for _, m := range members {
				var one []byte
				switch typ {
				case "SS":
					one, _ = json.Marshal(map[string]string{"S": m})
				case "NS":
					one, _ = json.Marshal(map[string]string{"N": m})
				default:
					one, _ = json.Marshal(map[string]string{"B": m})
				}
				s, err := valueSize(one)
				if err != nil {
					return 0, err
				}
				n += s
			}
			return n, nil
		case "L":
			var elems []json.RawMessage
			if err := json.Unmarshal(v, &elems); err != nil {
				return 0, err
			}
			n := 3
			for _, e := range elems {
				s, err := valueSize(e)
				if err != nil {
					return 0, err
				}
				n += s + 1
			}
			return n, nil
		case "M":
			var m Item
			if err := json.Unmarshal(v, &m); err != nil {
				return 0, err
			}
			n := 3
			for name, e := range m {
				s, err := valueSize(e)
				if err != nil {
					return 0, err
				}
				n += len(name) + s + 1
			}
			return n, nil
		}
		return 0, fmt.Errorf("unknown attribute type %q", typ)
	}
	panic("unreachable")
}

// numberSize is a number's size: 1 byte per two significant digits,
// leading and trailing zeroes trimmed, plus 1.
func numberSize(s string) (int, error) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	mant, _, _ := strings.Cut(strings.ToLower(s), "e")
	digits := strings.ReplaceAll(mant, ".", "")
	if digits == "" || !utf8.ValidString(digits) {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("not a number: %q", s)
		}
	}
	sig := len(strings.Trim(digits, "0"))
	return (sig+1)/2 + 1, nil
}

// WriteUnits are the write request units of a write of an item of size
// bytes (the larger of its size before and after): one per KB started,
// at least one (DynamoDB developer guide, "DynamoDB read and write
// operations").
func WriteUnits(size int) int { return max(1, (size+1023)/1024) }

// ReadUnits are the read request units of a strongly consistent read of
// size bytes: one per 4 KB started, at least one.
func ReadUnits(size int) int { return max(1, (size+4095)/4096) }
