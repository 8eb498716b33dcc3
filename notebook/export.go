package notebook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// notes_export: a tool that takes longer than a gateway lets a request
// run, so it runs only as a task of the tasks extension.

var exportTool = &stateless.Tool{
	Name:  "notes_export",
	Title: "Export notes",
	Description: "Exports all your notes as one Markdown document. It takes about a minute (the export is paced, as a " +
		"slow downstream system would pace it), so it runs as a task: poll it with tasks/get. A client that does not " +
		"take tasks (io.modelcontextprotocol/tasks) is refused with -32021. With askTitle the task first asks the user " +
		"for the document's title (answer it with tasks/update).",
	Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)},
	Scopes:      scopesRead,
	TaskSupport: stateless.TaskSupportRequired,
}

type exportIn struct {
	Seconds  *int `json:"seconds,omitempty" jsonschema:"how long the export takes, in seconds: 0 to 600, default 60"`
	AskTitle bool `json:"askTitle,omitempty" jsonschema:"ask the user for the document's title first (needs elicitation)"`
}

// titleKey is the key of the export's one input request.
const titleKey = "title"

// maxTitle bounds a title, in characters.
const maxTitle = 200

// askTitle is the export's input request: a task that waits for input
// (input_required) until tasks/update answers it.
func askTitle() *stateless.InputRequired {
	return &stateless.InputRequired{Requests: map[string]stateless.InputRequest{titleKey: stateless.ElicitForm("Title of the export?",
		map[string]any{
			"type":       "object",
			"properties": map[string]any{"title": map[string]any{"type": "string", "maxLength": maxTitle}},
			"required":   []string{"title"},
		})}}
}

// exportTitle is the document's title: the user's answer, on one line and
// at most maxTitle characters, or "Notes" when there is none.
func exportTitle(req *stateless.ToolRequest) string {
	r, ok := req.ElicitResult(titleKey)
	if !ok || !r.Accepted() {
		return "Notes"
	}
	t, _ := r.Content["title"].(string)
	if t = strings.Join(strings.Fields(t), " "); t == "" {
		return "Notes"
	}
	if runes := []rune(t); len(runes) > maxTitle {
		t = string(runes[:maxTitle])
	}
	return t
}

type exportOut struct {
	Notes    int    `json:"notes"`
	Markdown string `json:"markdown"`
}

// exportDuration is how long an export takes unless the call says.
const exportDuration = 60 * time.Second

// export reads the caller's notes page by page and renders them, spread
// over the export's duration; cancelling the task stops it. With
// askTitle it first asks for the document's title: an input round within
// the task. A run that
// completes records itself (NoteStore.RecordExport) just before it
// returns, so that the store shows how many times a task's export ran.
// A store that fails is tried again for a while (outlast).
func (d *demo) export(ctx context.Context, req *stateless.ToolRequest, in exportIn) (*stateless.CallToolResult, exportOut, error) {
	total := exportDuration
	if in.Seconds != nil {
		if *in.Seconds < 0 || *in.Seconds > 600 {
			return nil, exportOut{}, mcperr.NewInvalidArguments("seconds must be between 0 and 600")
		}
		total = time.Duration(*in.Seconds) * time.Second
	}
	if _, answered := req.ElicitResult(titleKey); in.AskTitle && !answered {
		return nil, exportOut{}, askTitle()
	}
	start := time.Now()
	var b strings.Builder
	b.WriteString("# " + exportTitle(req) + "\n")
	n, after := 0, ""
	for {
		var page []Note
		var more bool
		err := outlast(ctx, func() (err error) {
			page, more, err = d.notes.List(ctx, req.Principal, after, 50)
			return err
		})
		if err != nil {
			return nil, exportOut{}, storeFailed(ctx, err)
		}
		for _, note := range page {
			fmt.Fprintf(&b, "\n## %s (%s)\n\n%s\n", note.ID, note.Created.UTC().Format(time.RFC3339), note.Text)
			n++
			after = note.ID
		}
		if !more {
			break
		}
	}
	// The pace: the rest of the duration, in steps that notice a cancel.
	for left := total - time.Since(start); left > 0; left = total - time.Since(start) {
		t := time.NewTimer(min(left, time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, exportOut{}, ctx.Err()
		case <-t.C:
		}
	}
	if req.Task != nil {
		run := runName(req.Task.Attempt)
		if err := outlast(ctx, func() error { return d.notes.RecordExport(ctx, req.Principal, req.Task.ID, run) }); err != nil {
			return nil, exportOut{}, storeFailed(ctx, err)
		}
	}
	return nil, exportOut{Notes: n, Markdown: b.String()}, nil
}

// exportOutage is how long the export tries a failing store again before
// it gives up: a task runs for minutes, and a store that is out for a
// few seconds (a failover) should not end it with an error its client
// can only answer by starting over.
const exportOutage = 30 * time.Second

// outlast runs op until it succeeds, backing off from 50 ms to 2 s, for
// at most exportOutage or until ctx ends; it returns op's last error.
func outlast(ctx context.Context, op func() error) error {
	giveUp := time.Now().Add(exportOutage)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		err := op()
		if err == nil || ctx.Err() != nil || time.Now().Add(wait).After(giveUp) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// runName names one run of a task: its attempt and random bits, so that
// two runs never share a name.
func runName(attempt int) string {
	var r [8]byte
	rand.Read(r[:])
	return fmt.Sprintf("%d-%s", attempt, hex.EncodeToString(r[:]))
}
