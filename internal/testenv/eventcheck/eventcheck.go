// Package eventcheck compares a Lambda response payload with a sample
// event's expected response (events/X.expected.json). It is the one
// implementation behind both `make invoke` and the events tests of
// functions/mcp, so that what the developer tool calls a pass is what the
// tests call a pass.
//
// An expected response is a View: the status, the headers, and the body
// decoded (JSON, or the messages of an event stream), so that files stay
// readable and a difference names a JSON path. Two things legitimately
// vary between runs and are normalised, nothing else:
//
//   - the string "<any>" in an expected file matches any present value:
//     generated note ids, sealed request state;
//   - serverInfo.version matches any string: tests build the function
//     unstamped ("dev") while `make build` stamps `git describe`.
package eventcheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Wildcard in an expected file matches any value that is present.
const Wildcard = "<any>"

// UnstampedVersion is the version a build without -X main.version
// reports; expected files carry it, and every serverInfo version is
// normalised to it before comparing.
const UnstampedVersion = "dev"

// View is a response payload in comparable form.
type View struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       any               `json:"body,omitempty"`
	Stream     []any             `json:"stream,omitempty"`
}

// ViewOf decodes a Lambda response payload (an API Gateway or function
// URL response object) into a View.
func ViewOf(payload []byte) (View, error) {
	var resp struct {
		StatusCode      int               `json:"statusCode"`
		Headers         map[string]string `json:"headers"`
		Body            string            `json:"body"`
		IsBase64Encoded bool              `json:"isBase64Encoded"`
	}
	if err := json.Unmarshal(payload, &resp); err != nil {
		return View{}, fmt.Errorf("the response payload is not JSON: %w", err)
	}
	if resp.IsBase64Encoded {
		return View{}, errors.New("the response body is base64-encoded; every MCP answer is text")
	}
	v := View{StatusCode: resp.StatusCode, Headers: resp.Headers}
	switch {
	case resp.Body == "":
	case resp.Headers["Content-Type"] == "text/event-stream":
		sc := bufio.NewScanner(strings.NewReader(resp.Body))
		sc.Buffer(nil, len(resp.Body)+1)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m any
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					return View{}, fmt.Errorf("event stream data is not JSON: %w: %s", err, data)
				}
				v.Stream = append(v.Stream, m)
			}
		}
		if err := sc.Err(); err != nil {
			return View{}, fmt.Errorf("reading the event stream: %w", err)
		}
	default:
		if err := json.Unmarshal([]byte(resp.Body), &v.Body); err != nil {
			return View{}, fmt.Errorf("the body is not JSON: %w: %s", err, resp.Body)
		}
	}
	return v, nil
}

// Check compares a response payload with an expected file's content and
// returns the first difference ("" when they match), as a JSON path and
// the two values.
func Check(expected, payload []byte) (string, error) {
	got, err := ViewOf(payload)
	if err != nil {
		return "", err
	}
	want, err := decode(expected)
	if err != nil {
		return "", fmt.Errorf("the expected response: %w", err)
	}
	g, err := generic(got)
	if err != nil {
		return "", err
	}
	return Match(Normalize(want), Normalize(g), "$"), nil
}

// decode reads an expected file into the generic JSON form, refusing
// members a View does not have (a misspelt "status" would otherwise be
// ignored and the file would check less than it appears to).
func decode(expected []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(expected))
	dec.DisallowUnknownFields()
	var v View
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var a any
	if err := json.Unmarshal(expected, &a); err != nil {
		return nil, err
	}
	return a, nil
}

// generic turns a View into the form json.Unmarshal gives into an any, so
// that it compares with a decoded file member by member.
func generic(v View) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the view: %w", err)
	}
	var a any
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("decoding the view: %w", err)
	}
	return a, nil
}

// serverInfoKeys are the members whose "version" is the build's: the
// 2026-07-28 result metadata and the legacy initialize result.
var serverInfoKeys = []string{"io.modelcontextprotocol/serverInfo", "serverInfo"}

// Normalize returns v (generic JSON) with every serverInfo version that
// is a string replaced by UnstampedVersion. It changes v in place.
func Normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if slices.Contains(serverInfoKeys, k) {
				if info, ok := c.(map[string]any); ok {
					if _, ok := info["version"].(string); ok {
						info["version"] = UnstampedVersion
					}
				}
			}
			Normalize(c)
		}
	case []any:
		for _, c := range t {
			Normalize(c)
		}
	}
	return v
}

// Match compares want and got (generic JSON) and returns the first
// difference under path, in a stable (sorted) member order; "<any>" in
// want matches any value present in got.
func Match(want, got any, path string) string {
	if s, ok := want.(string); ok && s == Wildcard {
		if got == nil {
			return path + ": missing, want any value"
		}
		return ""
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %s, want an object", path, compact(got))
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			wv, inWant := w[k]
			gv, inGot := g[k]
			switch {
			case !inGot:
				return fmt.Sprintf("%s.%s: missing, want %s", path, k, compact(wv))
			case !inWant:
				return fmt.Sprintf("%s.%s: unexpected member %s", path, k, compact(gv))
			}
			if d := Match(wv, gv, path+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: got %s, want an array", path, compact(got))
		}
		if len(g) != len(w) {
			return fmt.Sprintf("%s: got %d elements, want %d: got %s", path, len(g), len(w), compact(got))
		}
		for i := range w {
			if d := Match(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	}
	wb, gb := compact(want), compact(got)
	if wb != gb {
		return fmt.Sprintf("%s: got %s, want %s", path, gb, wb)
	}
	return ""
}

// compact is v as one line of JSON, shortened for a message.
func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// Regenerate returns the expected file for a response payload, keeping
// the checks that a plain rewrite would lose: wherever old (the current
// expected file, nil if none) has "<any>" and the new answer has a value,
// the wildcard stays; serverInfo versions are written normalised. So
// `go test -update` records what changed and never loosens or tightens
// the check by accident.
func Regenerate(old, payload []byte) ([]byte, error) {
	v, err := ViewOf(payload)
	if err != nil {
		return nil, err
	}
	got, err := generic(v)
	if err != nil {
		return nil, err
	}
	got = Normalize(got)
	if len(old) > 0 {
		var prev any
		if err := json.Unmarshal(old, &prev); err != nil {
			return nil, fmt.Errorf("the current expected response: %w", err)
		}
		got = keepWildcards(prev, got)
	}
	// Back into a View, so the file lists statusCode, headers, body in
	// that order, as a reader expects.
	b, err := json.Marshal(got)
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	var out View
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	return Format(out)
}

func keepWildcards(old, got any) any {
	if s, ok := old.(string); ok && s == Wildcard && got != nil {
		return Wildcard
	}
	switch o := old.(type) {
	case map[string]any:
		if g, ok := got.(map[string]any); ok {
			for k, gv := range g {
				if ov, ok := o[k]; ok {
					g[k] = keepWildcards(ov, gv)
				}
			}
		}
	case []any:
		if g, ok := got.([]any); ok {
			for i := range min(len(o), len(g)) {
				g[i] = keepWildcards(o[i], g[i])
			}
		}
	}
	return got
}

// Format writes v as an expected file is written: two-space indent,
// object members sorted, "<" and ">" left as they are (the wildcard must stay
// readable), a final newline.
func Format(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	return b.Bytes(), nil
}

// ExpectedPath is the expected response of an event: X.json ->
// X.expected.json.
func ExpectedPath(event string) string {
	return strings.TrimSuffix(event, ".json") + ".expected.json"
}

// Predecessor returns the event that must run first, against the same
// state, for event to be meaningful ("" if none): X-replay.json replays
// X.json's idempotency key, so X.json must have completed first.
func Predecessor(event string) string {
	if base, ok := strings.CutSuffix(event, "-replay.json"); ok {
		return base + ".json"
	}
	return ""
}

// Events lists the sample events in dir (every *.json but the expected
// responses), sorted.
func Events(dir string) ([]string, error) {
	all, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var evs []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".expected.json") {
			evs = append(evs, f)
		}
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("no sample events in %s", dir)
	}
	return evs, nil
}

// CheckFile compares a payload with event's expected file.
func CheckFile(event string, payload []byte) (string, error) {
	want, err := os.ReadFile(ExpectedPath(event))
	if err != nil {
		return "", fmt.Errorf("no expected response: %w", err)
	}
	return Check(want, payload)
}
