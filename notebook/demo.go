package notebook

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// The demo is a small note book: the patterns a fork needs, each in one
// tool. Adding a tool is one function with typed input and output, and
// one AddTool line in register.
type demo struct {
	notes NoteStore
}

// register adds the demo's tools, resources and prompt to srv.
func (d *demo) register(srv *stateless.Server) {
	stateless.AddTool(srv, searchTool, d.search)
	stateless.AddTool(srv, addTool, d.add)
	stateless.AddTool(srv, deleteTool, d.delete)
	stateless.AddTool(srv, digestTool, d.digest)
	stateless.AddTool(srv, exportTool, d.export)
	srv.AddResource(readme, d.readReadme)
	srv.AddResourceTemplate(noteTemplate, d.readNote)
	srv.AddPrompt(summarizePrompt, d.summarize)
	srv.SetCompletionHandler(d.complete)
}

func boolPtr(b bool) *bool { return &b }

// storeFailed is a tool's answer to its note store's failure: the
// context's error when the call's context has ended — its caller went
// away, or its deadline passed, which the server answers for (cancelled,
// timeout) — else a RetryLater, something behind the tool being down,
// which the model may retry and the operator sees.
func storeFailed(ctx context.Context, err error) error {
	if e := ctx.Err(); e != nil {
		return e
	}
	return mcperr.NewRetryLater(0, err)
}

// storeRefused is storeFailed for a resource, a prompt or a completion,
// which refuse a request rather than show the model a failure: the
// context's error, or a DependencyFailure.
func storeRefused(ctx context.Context, err error) error {
	if e := ctx.Err(); e != nil {
		return e
	}
	return mcperr.Wrap(mcperr.KindDependencyFailure, err)
}

// The demo's OAuth scopes, when the endpoint is protected: reading notes
// needs notes:read, changing them notes:write, which implies notes:read.
var (
	scopesRead  = []string{"notes:read"}
	scopesWrite = []string{"notes:write"}
	// scopeImplies is the demo's scope hierarchy.
	scopeImplies = map[string][]string{"notes:write": {"notes:read"}}
)

// notes_search: a read-only tool.

var searchTool = &stateless.Tool{
	Name:  "notes_search",
	Title: "Search notes",
	Description: "Lists your notes whose text contains the query (all notes when the query is empty), oldest first, " +
		"at most 50 at a time: when the answer has a nextCursor, call again with it as cursor for the notes after these.",
	Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)},
	Scopes:      scopesRead,
}

type searchIn struct {
	Query  string `json:"query,omitempty" jsonschema:"text to look for, case-insensitive"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the nextCursor of the previous answer to this search, for the notes after it"`
}

type searchOut struct {
	Notes      []Note `json:"notes"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// The bounds of one notes_search answer: at most searchPage notes, found
// among at most searchScan notes read from the store, storePage at a
// time. A search through a large book with few matches may answer fewer
// notes, even none, with a nextCursor: the client goes on until there is
// none.
const (
	searchPage = 50
	searchScan = 500
	storePage  = 100
)

func (d *demo) search(ctx context.Context, req *stateless.ToolRequest, in searchIn) (*stateless.CallToolResult, searchOut, error) {
	q := strings.ToLower(in.Query)
	after := ""
	if in.Cursor != "" {
		var ok bool
		if after, ok = openCursor(req.Principal, q, in.Cursor); !ok {
			return nil, searchOut{}, mcperr.NewInvalidArguments("cursor is not a nextCursor that notes_search gave you for this query")
		}
	}
	out := searchOut{Notes: []Note{}}
	for examined := 0; ; {
		batch, more, err := d.notes.List(ctx, req.Principal, after, min(storePage, searchScan-examined))
		if err != nil {
			return nil, searchOut{}, storeFailed(ctx, err)
		}
		for i, n := range batch {
			examined++
			after = n.ID
			if !strings.Contains(strings.ToLower(n.Text), q) {
				continue
			}
			out.Notes = append(out.Notes, n)
			if len(out.Notes) == searchPage {
				if more || i < len(batch)-1 {
					out.NextCursor = makeCursor(req.Principal, q, after)
				}
				return nil, out, nil
			}
		}
		switch {
		case !more:
			return nil, out, nil
		case examined >= searchScan:
			out.NextCursor = makeCursor(req.Principal, q, after)
			return nil, out, nil
		}
	}
}

// notes_add: a side-effecting tool.

var addTool = &stateless.Tool{
	Name:        "notes_add",
	Title:       "Add a note",
	Description: "Adds a note and returns its id. Send an idempotency key to make retries safe.",
	Annotations: &stateless.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)},
	Scopes:      scopesWrite,
	// Its one effect is the note and its count, enlisted in a keyed
	// call's claim with the book's room a condition of that write (not a
	// read before it), and what it records of the add waits for the
	// commit (claims.OnCommit): a keyed add is one DynamoDB request, and
	// so is its replay.
	EnlistedEffectsOnly: true,
}

type addIn struct {
	Text string `json:"text" jsonschema:"the note, at most 4000 characters"`
}

type addOut struct {
	ID string `json:"id"`
}

// noteLimit is the details of a refused add: the limit it reached
// (MaxNotesPerOwner for note_limit_reached).
type noteLimit struct {
	Limit int `json:"limit"`
}

func (d *demo) add(ctx context.Context, req *stateless.ToolRequest, in addIn) (*stateless.CallToolResult, addOut, error) {
	switch {
	case strings.TrimSpace(in.Text) == "":
		return nil, addOut{}, mcperr.NewInvalidArguments("text is empty")
	case len([]rune(in.Text)) > 4000:
		return nil, addOut{}, mcperr.NewInvalidArguments("text is longer than 4000 characters")
	}
	n, err := d.notes.Add(ctx, req.Principal, in.Text)
	var full *NoteLimitError
	switch {
	case errors.As(err, &full):
		return nil, addOut{}, full.failure()
	case err != nil:
		// The store failed: retryable, and its cause is in the request's
		// log line (by type and AWS error code).
		return nil, addOut{}, storeFailed(ctx, err)
	}
	// The operator's view of the call (its id is the store's, never the
	// note's text): a record with the request's fields, and a metric. In
	// a keyed call the note exists only once the call's claim commits,
	// which a replay's does not: they wait for it.
	added := func() {
		req.Logger().Info("note added", "note_id", n.ID)
		_ = req.Metric("NotesAdded", 1, stateless.MetricUnitCount)
	}
	if !claims.OnCommit(ctx, added) {
		added()
	}
	return nil, addOut{ID: n.ID}, nil
}

// notes_delete: a tool that asks the user to confirm (multi-round trip).

var deleteTool = &stateless.Tool{
	Name:        "notes_delete",
	Title:       "Delete a note",
	Description: "Deletes a note after the user confirms it.",
	Annotations: &stateless.ToolAnnotations{DestructiveHint: boolPtr(true), IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	Scopes:      scopesWrite,
}

type deleteIn struct {
	ID string `json:"id" jsonschema:"the note's id, as notes_search or notes_add gave it"`
}

type deleteOut struct {
	Deleted bool `json:"deleted"`
}

const confirmKey = "confirm"

func (d *demo) delete(ctx context.Context, req *stateless.ToolRequest, in deleteIn) (*stateless.CallToolResult, deleteOut, error) {
	if !validNoteID(in.ID) {
		return nil, deleteOut{}, mcperr.NewNotFound("no note with that id")
	}
	answer, ok := req.ElicitResult(confirmKey)
	if _, asked := req.State(); !asked || !ok {
		// First round, or the client came back without an answer: ask,
		// showing the note when there is one. Like rm -i, the question
		// comes first; whether the note exists is settled on delete.
		what := "the note " + in.ID
		if n, err := d.notes.Get(ctx, req.Principal, in.ID); err == nil {
			what = fmt.Sprintf("the note %q", preview(n.Text))
		}
		return nil, deleteOut{}, &stateless.InputRequired{
			Requests: map[string]stateless.InputRequest{confirmKey: stateless.ElicitForm(
				"Delete "+what+"?",
				map[string]any{
					"type":       "object",
					"properties": map[string]any{"confirm": map[string]any{"type": "boolean", "title": "Delete it"}},
					"required":   []string{"confirm"},
				})},
			State: []byte("asked"),
			// One confirmation deletes once: a replayed retry is refused.
			SingleUse: true,
		}
	}
	if !answer.Accepted() || answer.Content["confirm"] != true {
		return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("The user kept the note.")}}, deleteOut{}, nil
	}
	if err := d.notes.Delete(ctx, req.Principal, in.ID); errors.Is(err, ErrNoNote) {
		return nil, deleteOut{}, mcperr.NewNotFound("no note with that id")
	} else if err != nil {
		return nil, deleteOut{}, storeFailed(ctx, err)
	}
	// A client showing the note, on whichever instance it listens, learns
	// that it changed: a read of it now finds nothing.
	req.NotifyOwnResourceUpdated(noteURI(in.ID))
	return nil, deleteOut{Deleted: true}, nil
}

func preview(s string) string {
	r := []rune(s)
	if len(r) > 60 {
		return string(r[:57]) + "..."
	}
	return s
}

// notes_digest: a tool that reports progress.

var digestTool = &stateless.Tool{
	Name:        "notes_digest",
	Title:       "Count words in notes",
	Description: "Counts the words in every note, reporting progress every 100 notes; pauseMs waits after each report, so that a client can watch the reports arrive.",
	Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)},
	Scopes:      scopesRead,
}

type digestIn struct {
	PauseMs int `json:"pauseMs,omitempty" jsonschema:"milliseconds to wait after each progress report: 0 to 5000, default 0"`
}

// maxDigestPause bounds pauseMs: long enough to tell a stream that
// delivers each report as it happens from one delivered whole (make
// smoke), short of any door's timeout.
const maxDigestPause = 5000

type digestOut struct {
	Notes int `json:"notes"`
	Words int `json:"words"`
}

// digest reads the book a page at a time: it never holds more than one
// page of notes.
func (d *demo) digest(ctx context.Context, req *stateless.ToolRequest, in digestIn) (*stateless.CallToolResult, digestOut, error) {
	if in.PauseMs < 0 || in.PauseMs > maxDigestPause {
		return nil, digestOut{}, mcperr.NewInvalidArguments(fmt.Sprintf("pauseMs must be 0 to %d", maxDigestPause))
	}
	pause := time.Duration(in.PauseMs) * time.Millisecond
	var out digestOut
	for after, more := "", true; more; {
		var batch []Note
		var err error
		batch, more, err = d.notes.List(ctx, req.Principal, after, storePage)
		if err != nil {
			return nil, digestOut{}, storeFailed(ctx, err)
		}
		for _, n := range batch {
			out.Words += len(strings.Fields(n.Text))
			after = n.ID
		}
		if len(batch) > 0 {
			out.Notes += len(batch)
			req.Progress(float64(out.Notes), 0, fmt.Sprintf("counted %d notes", out.Notes))
			if pause > 0 {
				t := time.NewTimer(pause)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil, digestOut{}, ctx.Err()
				case <-t.C:
				}
			}
		}
	}
	req.Log(stateless.LevelInfo, "notes_digest", fmt.Sprintf("counted %d words in %d notes", out.Words, out.Notes))
	return nil, out, nil
}

// Resources.

var readme = &stateless.Resource{
	URI:         "notes://readme",
	Name:        "readme",
	Title:       "About this note book",
	Description: "How to use the note book tools.",
	MIMEType:    "text/markdown",
}

const readmeText = `# Note book

- notes_add adds a note (send an idempotency key to make retries safe);
- notes_search lists notes, 50 at a time (pass its nextCursor back as
  cursor for more);
- notes_delete deletes one after you confirm;
- notes_digest counts words, reporting progress.

Each caller has at most 1000 notes.

Each note is also a resource: notes://note/{id}.
`

func (d *demo) readReadme(ctx context.Context, req *stateless.ResourceRequest) (*stateless.ReadResourceResult, error) {
	return &stateless.ReadResourceResult{
		Contents: []stateless.ResourceContents{{URI: readme.URI, MIMEType: readme.MIMEType, Text: readmeText}},
		Cache:    &stateless.CacheHint{TTL: time.Hour}, // it changes with deployments only
	}, nil
}

// noteURI is the resource URI of the note with id.
func noteURI(id string) string { return "notes://note/" + id }

var noteTemplate = &stateless.ResourceTemplate{
	URITemplate: "notes://note/{id}",
	Name:        "note",
	Title:       "A note",
	Description: "One of your notes, by id.",
	MIMEType:    "text/plain",
}

func (d *demo) readNote(ctx context.Context, req *stateless.ResourceRequest) (*stateless.ReadResourceResult, error) {
	id := req.Vars["id"]
	if !validNoteID(id) {
		return nil, mcperr.NewUnknownResource(req.URI)
	}
	n, err := d.notes.Get(ctx, req.Principal, id)
	if errors.Is(err, ErrNoNote) {
		return nil, mcperr.NewUnknownResource(req.URI)
	} else if err != nil {
		return nil, storeRefused(ctx, err)
	}
	return &stateless.ReadResourceResult{Contents: []stateless.ResourceContents{{URI: req.URI, MIMEType: "text/plain", Text: n.Text}}}, nil
}

// Prompt and completion.

var summarizePrompt = &stateless.Prompt{
	Name:        "summarize_notes",
	Title:       "Summarize my notes",
	Description: "Asks the model to summarize your notes, optionally around a focus.",
	Arguments:   []stateless.PromptArgument{{Name: "focus", Description: "what to focus on, such as todo or ideas"}},
}

// promptNotes is how many notes the prompt quotes, at most.
const promptNotes = 50

func (d *demo) summarize(ctx context.Context, req *stateless.PromptRequest) (*stateless.GetPromptResult, error) {
	all, more, err := d.notes.List(ctx, req.Principal, "", promptNotes)
	if err != nil {
		return nil, storeRefused(ctx, err)
	}
	var b strings.Builder
	b.WriteString("Summarize these notes")
	if f := req.Arguments["focus"]; f != "" {
		fmt.Fprintf(&b, ", focusing on %s", f)
	}
	b.WriteString(":\n")
	for _, n := range all {
		fmt.Fprintf(&b, "- %s\n", n.Text)
	}
	if len(all) == 0 {
		b.WriteString("(there are no notes yet)\n")
	}
	if more {
		fmt.Fprintf(&b, "(these are the oldest %d notes; there are more)\n", len(all))
	}
	return &stateless.GetPromptResult{
		Description: "Summary of your notes",
		Messages:    []stateless.PromptMessage{{Role: "user", Content: stateless.Text(b.String())}},
	}, nil
}

var focusValues = []string{"decisions", "ideas", "meetings", "people", "todo"}

// maxCompletions is the most values a completion answers (the
// protocol's limit).
const maxCompletions = 100

func (d *demo) complete(ctx context.Context, req *stateless.CompleteRequest) (*stateless.CompleteResult, error) {
	res := &stateless.CompleteResult{}
	switch {
	case req.RefType == "ref/prompt" && req.RefName == summarizePrompt.Name && req.Argument == "focus":
		for _, c := range focusValues {
			if strings.HasPrefix(c, req.Value) {
				res.Completion.Values = append(res.Completion.Values, c)
			}
		}
	case req.RefType == "ref/resource" && req.RefName == noteTemplate.URITemplate && req.Argument == "id":
		values, more, err := d.completeID(ctx, req.Principal, req.Value)
		if err != nil {
			return nil, storeRefused(ctx, err)
		}
		res.Completion.Values, res.Completion.HasMore = values, more
	}
	res.Completion.Total = len(res.Completion.Values)
	return res, nil
}

// completeID returns the caller's note ids that begin with prefix, at most
// maxCompletions, with one read: ids sort, so the ones with a prefix are
// the first ones after it.
func (d *demo) completeID(ctx context.Context, principal, prefix string) ([]string, bool, error) {
	if len(prefix) >= 17 {
		if !validNoteID(prefix) {
			return nil, false, nil
		}
		if _, err := d.notes.Get(ctx, principal, prefix); errors.Is(err, ErrNoNote) {
			return nil, false, nil
		} else if err != nil {
			return nil, false, err
		}
		return []string{prefix}, false, nil
	}
	notes, more, err := d.notes.List(ctx, principal, prefix, maxCompletions)
	if err != nil {
		return nil, false, err
	}
	var ids []string
	for _, n := range notes {
		if !strings.HasPrefix(n.ID, prefix) {
			return ids, false, nil
		}
		ids = append(ids, n.ID)
	}
	return ids, more, nil
}
