package eventcheck

import (
	"encoding/json"
	"strings"
	"testing"
)

// payload builds a Lambda response payload around a JSON body.
func payload(t *testing.T, status int, body string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"statusCode": status, "headers": map[string]string{"Content-Type": "application/json"},
		"body": body, "isBase64Encoded": false,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const expected = `{
  "statusCode": 200,
  "headers": {"Content-Type": "application/json"},
  "body": {
    "id": 3,
    "result": {
      "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "demo", "version": "dev"}},
      "content": [{"type": "text", "text": "<any>"}],
      "structuredContent": {"id": "<any>", "tags": ["a", "b"]}
    }
  }
}`

const matching = `{"id":3,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"demo","version":"v1.4.0-3-gabc123-dirty"}},` +
	`"content":[{"type":"text","text":"{\"id\":\"n1\"}"}],"structuredContent":{"id":"n1","tags":["a","b"]}}}`

func TestCheckMatches(t *testing.T) {
	diff, err := Check([]byte(expected), payload(t, 200, matching))
	if err != nil {
		t.Fatal(err)
	}
	if diff != "" {
		t.Fatalf("a matching answer (a stamped version, wildcards filled) differs: %s", diff)
	}
}

// TestCheckFails proves the matcher fails on every kind of real
// difference, and names where.
func TestCheckFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string // in the difference
	}{
		{"status", 400, matching, "$.statusCode: got 400, want 200"},
		{"missing member", 200, strings.Replace(matching, `"id":3,`, "", 1), "$.body.id: missing"},
		{"extra member", 200, strings.Replace(matching, `"id":3,`, `"id":3,"error":null,`, 1), "$.body.error: unexpected member"},
		{"array length", 200, strings.Replace(matching, `["a","b"]`, `["a","b","c"]`, 1), "$.body.result.structuredContent.tags: got 3 elements, want 2"},
		{"value", 200, strings.Replace(matching, `["a","b"]`, `["a","x"]`, 1), `$.body.result.structuredContent.tags[1]: got "x", want "b"`},
		{"number vs string", 200, strings.Replace(matching, `"id":3,`, `"id":"3",`, 1), `$.body.id: got "3", want 3`},
		{"wildcard needs a value", 200, strings.Replace(matching, `"id":"n1",`, "", 1), "$.body.result.structuredContent.id: missing"},
		{"version must be a string", 200, strings.Replace(matching, `"version":"v1.4.0-3-gabc123-dirty"`, `"version":7`, 1), "version: got 7"},
		{"version must be present", 200, strings.Replace(matching, `,"version":"v1.4.0-3-gabc123-dirty"`, "", 1), "version: missing"},
		{"name is not normalised", 200, strings.Replace(matching, `"name":"demo"`, `"name":"other"`, 1), `name: got "other"`},
		{"object vs array", 200, strings.Replace(matching, `["a","b"]`, `{"a":"b"}`, 1), "tags: got {\"a\":\"b\"}, want an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diff, err := Check([]byte(expected), payload(t, tc.status, tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff == "" {
				t.Fatal("no difference found")
			}
			if !strings.Contains(diff, tc.want) {
				t.Fatalf("difference %q does not say %q", diff, tc.want)
			}
		})
	}
}

func TestCheckHeaders(t *testing.T) {
	p := []byte(`{"statusCode":200,"headers":{"Content-Type":"text/plain"},"body":"{}"}`)
	diff, err := Check([]byte(`{"statusCode":200,"headers":{"Content-Type":"application/json"},"body":{}}`), p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diff, "$.headers.Content-Type") {
		t.Fatalf("difference %q", diff)
	}
}

func TestCheckStream(t *testing.T) {
	body := "event: message\ndata: {\"method\":\"notifications/message\"}\n\nevent: message\ndata: {\"id\":5,\"result\":{}}\n\n"
	p, _ := json.Marshal(map[string]any{"statusCode": 200, "headers": map[string]string{"Content-Type": "text/event-stream"}, "body": body})
	want := `{"statusCode":200,"headers":{"Content-Type":"text/event-stream"},"stream":[{"method":"notifications/message"},{"id":5,"result":{}}]}`
	if diff, err := Check([]byte(want), p); err != nil || diff != "" {
		t.Fatalf("diff %q, err %v", diff, err)
	}
	short := `{"statusCode":200,"headers":{"Content-Type":"text/event-stream"},"stream":[{"id":5,"result":{}}]}`
	if diff, _ := Check([]byte(short), p); !strings.Contains(diff, "$.stream: got 2 elements, want 1") {
		t.Fatalf("a stream with an extra message: difference %q", diff)
	}
}

func TestCheckRefusesUnknownTopLevel(t *testing.T) {
	if _, err := Check([]byte(`{"status":200}`), payload(t, 200, "{}")); err == nil {
		t.Fatal("an expected file with a misspelt member was accepted")
	}
}

func TestViewOfErrors(t *testing.T) {
	for name, p := range map[string]string{
		"not JSON":      `statusCode: 200`,
		"base64 body":   `{"statusCode":200,"body":"e30=","isBase64Encoded":true}`,
		"body not JSON": `{"statusCode":200,"headers":{"Content-Type":"application/json"},"body":"oops"}`,
	} {
		if _, err := ViewOf([]byte(p)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRegenerateKeepsChecks(t *testing.T) {
	// The new answer changed one value (tags) and filled the wildcards.
	changed := strings.Replace(matching, `["a","b"]`, `["a","c"]`, 1)
	out, err := Regenerate([]byte(expected), payload(t, 200, changed))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{`"text": "<any>"`, `"id": "<any>"`, `"version": "dev"`, `"c"`} {
		if !strings.Contains(s, want) {
			t.Errorf("regenerated file lacks %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, "v1.4.0") || strings.Contains(s, `"n1"`) {
		t.Errorf("regenerated file recorded a varying value:\n%s", s)
	}
	// The regenerated file checks the answer it came from, and still
	// fails the old one.
	if diff, _ := Check(out, payload(t, 200, changed)); diff != "" {
		t.Errorf("regenerated file does not match its answer: %s", diff)
	}
	if diff, _ := Check(out, payload(t, 200, matching)); diff == "" {
		t.Error("regenerated file still matches the old answer")
	}
	// A wildcard whose member disappeared is not kept: the change shows.
	gone := strings.Replace(matching, `"id":"n1",`, "", 1)
	out, err = Regenerate([]byte(expected), payload(t, 200, gone))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(out), Wildcard) != 1 {
		t.Errorf("wildcards after a member went away:\n%s", out)
	}
}

func TestRegenerateIsStable(t *testing.T) {
	first, err := Regenerate(nil, payload(t, 200, `{"a":"<b>&c"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(first), `"<b>&c"`) || !strings.HasSuffix(string(first), "}\n") {
		t.Fatalf("format: %s", first)
	}
	again, err := Regenerate(first, payload(t, 200, `{"a":"<b>&c"}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(first) {
		t.Fatalf("regenerating twice changed the file:\n%s\n%s", first, again)
	}
}

func TestPredecessor(t *testing.T) {
	if p := Predecessor("events/notes-add-keyed-replay.json"); p != "events/notes-add-keyed.json" {
		t.Errorf("got %q", p)
	}
	if p := Predecessor("events/discover.json"); p != "" {
		t.Errorf("got %q", p)
	}
	if p := ExpectedPath("events/discover.json"); p != "events/discover.expected.json" {
		t.Errorf("got %q", p)
	}
}
