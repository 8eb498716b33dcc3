package notebook

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// healthyDynamoDB is a DynamoDB that answers every Query with no notes
// and every GetItem with no item or, while hangUp is set, lets its
// caller go away mid-read: it calls
// hangUp, which cancels the call's context as a client that closes its
// connection does, and waits for the SDK to drop the request. Writes
// succeed (a counter's UpdateItem answers 1).
type healthyDynamoDB struct {
	mu     sync.Mutex
	hangUp func()
}

func (d *healthyDynamoDB) setHangUp(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hangUp = f
}

func (d *healthyDynamoDB) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body) // so that the server notices a client gone
	body := []byte(`{}`)
	switch _, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), "."); op {
	case "Query", "GetItem":
		d.mu.Lock()
		hangUp := d.hangUp
		d.mu.Unlock()
		if hangUp != nil {
			hangUp()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		if op == "Query" {
			body = []byte(`{"Count":0,"Items":[],"ScannedCount":0}`)
		}
	case "UpdateItem":
		body = []byte(`{"Attributes":{"n":{"N":"1"}}}`)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	w.Write(body)
}

// TestHangUpsAreTheCallers: with MCP_CIRCUIT_BREAKER=3/30s and DynamoDB
// healthy, notes_search calls whose client went away while the table
// answered are the caller's doing: each is logged at INFO, outside
// Faults, as cancelled, and however many there are, the tool's circuit
// stays closed for everyone. A resource's or a prompt's are the same.
func TestHangUpsAreTheCallers(t *testing.T) {
	ddb := &healthyDynamoDB{}
	table := httptest.NewServer(ddb)
	defer table.Close()
	cfg, err := endpoint.LoadConfig(func(k string) string {
		return map[string]string{endpoint.EnvClaimsTable: "notes", endpoint.EnvBreaker: "3/30s"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	clients := &endpoint.Clients{Configure: func(c *aws.Config) {
		c.BaseEndpoint = aws.String(table.URL)
		c.Region = "us-east-1"
		c.Credentials = credentials.NewStaticCredentialsProvider("test", "test", "")
		c.Logger = logging.Nop{}
	}}
	var out syncbuf.Buffer
	ep, err := New(cfg, endpoint.Options{Stdout: &out, Clients: clients}, "test")
	if err != nil {
		t.Fatal(err)
	}
	alice := mcptest.New(t, ep.Server)
	alice.Principal = "alice"
	hangUp := func(call func(ctx context.Context)) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ddb.setHangUp(cancel)
		defer ddb.setHangUp(nil)
		call(ctx)
	}
	for range 6 {
		hangUp(func(ctx context.Context) {
			alice.CallTool("notes_search", map[string]any{"query": "x"}, mcptest.Context(ctx))
		})
	}
	// A resource and a prompt whose caller went away are the caller's
	// too.
	hangUp(func(ctx context.Context) {
		alice.Call("resources/read", map[string]any{"uri": "notes://note/n0000000000000001"}, mcptest.Context(ctx))
	})
	hangUp(func(ctx context.Context) {
		alice.Call("prompts/get", map[string]any{"name": summarizePrompt.Name}, mcptest.Context(ctx))
	})
	hangUps := requestLines(t, out.Take())
	bob := mcptest.New(t, ep.Server)
	bob.Principal = "bob"
	if a := bob.CallTool("notes_search", map[string]any{"query": "x"}); a.IsError() {
		t.Errorf("another caller's search after six hang-ups: %s", a.Raw)
	}
	if len(hangUps) != 8 {
		t.Fatalf("%d request lines for eight calls", len(hangUps))
	}
	for i, l := range hangUps {
		if l["level"] != "INFO" || l["fault"] == true || l["Faults"] != float64(0) || l["Outcome"] != "cancelled" {
			t.Errorf("hang-up %d (%v): level %v, fault %v, Faults %v, Outcome %v", i, l["Method"], l["level"], l["fault"], l["Faults"], l["Outcome"])
		}
	}
}

// requestLines are the request lines among raw's.
func requestLines(t *testing.T, raw string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(raw), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" {
			lines = append(lines, m)
		}
	}
	return lines
}

// stalledNotes is a note store whose every call waits until its context
// ends, hanging up the caller first when hangUp is set, and then fails as
// the AWS SDK does: with its cancellation error around the context's.
type stalledNotes struct{ hangUp func() }

func (s stalledNotes) stall(ctx context.Context, op string) error {
	if s.hangUp != nil {
		s.hangUp()
	}
	<-ctx.Done()
	return fmt.Errorf("%s: %w", op, &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "Query", Err: &smithy.CanceledError{Err: ctx.Err()}})
}

func (s stalledNotes) Add(ctx context.Context, owner, text string) (Note, error) {
	return Note{}, s.stall(ctx, "adding a note")
}
func (s stalledNotes) Get(ctx context.Context, owner, id string) (Note, error) {
	return Note{}, s.stall(ctx, "reading a note")
}
func (s stalledNotes) Delete(ctx context.Context, owner, id string) error {
	return s.stall(ctx, "deleting a note")
}
func (s stalledNotes) List(ctx context.Context, owner, after string, limit int) ([]Note, bool, error) {
	return nil, false, s.stall(ctx, "listing notes")
}
func (s stalledNotes) RecordExport(ctx context.Context, owner, taskID, run string) error {
	return s.stall(ctx, "recording the export's run")
}

// TestToolsAnswerTheirContextsEnd: a tool whose store call was cut short
// because its context ended returns the context's error, not a RetryLater
// that tells the model the table is down: a caller's hang-up is answered
// as the caller's (cancelled, not a fault), the call's deadline as the
// server's timeout.
func TestToolsAnswerTheirContextsEnd(t *testing.T) {
	calls := []*stateless.Invocation{
		{Tool: "notes_search", Arguments: json.RawMessage(`{"query":"x"}`)},
		{Tool: "notes_add", Arguments: json.RawMessage(`{"text":"x"}`)},
		{Tool: "notes_delete", Arguments: json.RawMessage(`{"id":"n0000000000000001"}`), State: []byte("asked"), HasState: true,
			InputResponses: map[string]json.RawMessage{confirmKey: json.RawMessage(`{"action":"accept","content":{"confirm":true}}`)}},
		{Tool: "notes_digest", Arguments: json.RawMessage(`{}`)},
		{Tool: "notes_export", Arguments: json.RawMessage(`{"seconds":0}`)},
	}
	for _, inv := range calls {
		for _, end := range []string{"hang-up", "deadline"} {
			t.Run(inv.Tool+"/"+end, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				notes := stalledNotes{}
				want := mcperr.KindTimeout
				if end == "hang-up" {
					ctx, cancel = context.WithCancel(context.Background())
					defer cancel()
					notes.hangUp, want = cancel, mcperr.KindCancelled
				}
				srv := taskServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: schemaEngine})
				(&demo{notes: notes}).register(srv)
				inv := *inv
				inv.Principal, inv.ProtocolVersion, inv.Outcome = "alice", stateless.Version20260728, &stateless.Outcome{}
				got, err := srv.Invoke(ctx, &inv)
				if err != nil {
					t.Fatal(err)
				}
				if got.Refusal == nil || got.Refusal.Kind() != want || inv.Outcome.Fault != want.ServerFault() {
					t.Errorf("answered %s, refusal %v, fault %v; want a refusal %v, fault %v", got.Result, got.Refusal, inv.Outcome.Fault, want, want.ServerFault())
				}
			})
		}
	}
}
