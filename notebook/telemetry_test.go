package notebook

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/emfcheck"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// TestNotesAddTelemetry: the demo's notes_add logs through its request's
// logger (the record carries the request's method, tool and principal
// digest) and emits NotesAdded, by Function and Tool, in the request's
// EMF; the note's text is in neither.
func TestNotesAddTelemetry(t *testing.T) {
	ep, out := localEndpoint(t)
	c := mcptest.New(t, ep.Server)
	c.Principal = "alice"
	const text = "NOTE-TEXT-5c1e"
	if a := c.CallTool("notes_add", map[string]any{"text": text}); a.IsError() {
		t.Fatalf("notes_add: %s", a.Raw)
	}
	raw := out.Take()
	if strings.Contains(raw, text) {
		t.Fatalf("the note's text is in the logs:\n%s", raw)
	}
	var record map[string]any
	var metricSeen bool
	for _, l := range strings.Split(strings.TrimSpace(raw), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		switch m["msg"] {
		case "note added":
			record = m
		case "request":
			ms, err := emfcheck.Check([]byte(l))
			if err != nil {
				t.Fatalf("not EMF: %v\n%s", err, l)
			}
			for _, x := range ms {
				if x.Name == "NotesAdded" && x.Value == 1 && x.Dimensions["Tool"] == "notes_add" {
					metricSeen = true
				}
			}
		}
	}
	if record == nil || record["method"] != "tools/call" || record["target"] != "notes_add" ||
		record["principal_digest"] != stateless.PrincipalDigest("alice") || record["note_id"] == nil {
		t.Errorf("the tool's record: %v\n%s", record, raw)
	}
	if !metricSeen {
		t.Errorf("no NotesAdded metric by Function and Tool:\n%s", raw)
	}
}
