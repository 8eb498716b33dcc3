//go:build integration

package notebook

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
	"github.com/serverless-mcp/mcp-lambda/pkg/items"
)

// notesTable is the table of the note store's tests, shaped as
// template.yaml's.
const notesTable = "notes-test"

// The DynamoDB Local of the note store's tests, started on first use and
// stopped by TestMain.
var ddbLocal struct {
	once sync.Once
	srv  *dynamolocal.Server
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if ddbLocal.srv != nil {
		ddbLocal.srv.Stop()
	}
	os.Exit(code)
}

func localDynamoDB(t *testing.T) *dynamolocal.Server {
	t.Helper()
	ddbLocal.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if ddbLocal.srv, ddbLocal.err = dynamolocal.Start(ctx); ddbLocal.err != nil {
			return
		}
		ddbLocal.err = dynamolocal.CreateTable(ctx, ddbLocal.srv.Client(), notesTable)
	})
	if ddbLocal.err != nil {
		t.Fatal(ddbLocal.err)
	}
	return ddbLocal.srv
}

func newDynamoNotes(t *testing.T, perOwner int) *tableNotes {
	return dynamoNotes(localDynamoDB(t).Client(), notesTable, perOwner)
}

// dynamoNotes keeps notes in table on DynamoDB (Local), at most perOwner
// each (0: MaxNotesPerOwner).
func dynamoNotes(c items.DynamoAPI, table string, perOwner int) *tableNotes {
	return newTableNotes(items.NewDynamoDB(c, table), perOwner)
}

func TestDynamoNoteStore(t *testing.T) {
	noteStoreContract(t, func(t *testing.T, perOwner int) NoteStore { return newDynamoNotes(t, perOwner) })
}

// TestDynamoLargeBook: notes of 4,000 four-byte characters (16 KB each)
// well past the 101 that filled the one item a book used to be, each
// its own item; pages cut short by DynamoDB's 1 MB are continued; the
// limit is a refusal that names it.
func TestDynamoLargeBook(t *testing.T) {
	ctx := context.Background()
	s := newDynamoNotes(t, 150)
	owner := fmt.Sprint("large-", time.Now().UnixNano())
	text := strings.Repeat("𝄞", 4000)
	var added []string
	for i := range 150 {
		n, err := s.Add(ctx, owner, text)
		if err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
		added = append(added, n.ID)
	}
	var full *NoteLimitError
	if _, err := s.Add(ctx, owner, text); !errors.As(err, &full) || full.Limit != 150 || !full.PerOwner {
		t.Fatalf("the 151st add: %v", err)
	}
	var seen []string
	after := ""
	for more := true; more; {
		var notes []Note
		var err error
		notes, more, err = s.List(ctx, owner, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		if more && len(notes) != 100 {
			t.Fatalf("a page of %d notes with more to come", len(notes))
		}
		for _, n := range notes {
			if n.Text != text {
				t.Fatalf("note %s: %d bytes", n.ID, len(n.Text))
			}
			seen = append(seen, n.ID)
			after = n.ID
		}
	}
	if !slices.Equal(seen, added) {
		t.Errorf("listed %d notes, added %d (or not in order)", len(seen), len(added))
	}
}

// TestDynamoCountExact: the count moves with the notes, in the same
// transactions: after concurrent adds past the limit and concurrent
// deletes of every note (each twice), it is zero, and the book takes its
// limit again.
func TestDynamoCountExact(t *testing.T) {
	ctx := context.Background()
	s := newDynamoNotes(t, 8)
	owner := fmt.Sprint("count-", time.Now().UnixNano())
	count := func() int64 {
		t.Helper()
		out, err := localDynamoDB(t).Client().GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(notesTable), Key: notesKey(notesPK(owner), counterSK), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return numAttr(out.Item, "notes")
	}
	concurrently := func(n int, f func(i int) error) {
		t.Helper()
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := f(i); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	for round := range 2 {
		concurrently(20, func(i int) error {
			var full *NoteLimitError
			if _, err := s.Add(ctx, owner, "note"); err != nil && !errors.As(err, &full) {
				return err
			}
			return nil
		})
		notes, _, err := s.List(ctx, owner, "", 100)
		if err != nil || len(notes) != 8 || count() != 8 {
			t.Fatalf("round %d: %d notes, count %d, %v", round, len(notes), count(), err)
		}
		concurrently(16, func(i int) error {
			if err := s.Delete(ctx, owner, notes[i%8].ID); err != nil && !errors.Is(err, ErrNoNote) {
				return err
			}
			return nil
		})
		if notes, _, _ := s.List(ctx, owner, "", 100); len(notes) != 0 || count() != 0 {
			t.Fatalf("round %d after the deletes: %d notes, count %d", round, len(notes), count())
		}
	}
}

// TestDynamoSearch: notes_search pages through a DynamoDB note book, and
// a cursor works only for the principal it was given to.
func TestDynamoSearch(t *testing.T) {
	srv := newDemoWith(newDynamoNotes(t, 0))
	stamp := fmt.Sprint(time.Now().UnixNano())
	alice := &demoClient{t: t, srv: srv, principal: "alice-" + stamp}
	bob := &demoClient{t: t, srv: srv, principal: "bob-" + stamp}
	var want []string
	for i := range 60 {
		want = append(want, structured(alice.add(fmt.Sprint("alice ", i)))["id"].(string))
		bob.add(fmt.Sprint("bob ", i))
	}
	first, cursor := alice.search("", "")
	rest, next := alice.search("", cursor)
	if got := append(first, rest...); !slices.Equal(got, want) || len(first) != 50 || next != "" {
		t.Errorf("pages of %d and %d, cursor %q; every note once: %v", len(first), len(rest), next, slices.Equal(got, want))
	}
	args, _ := json.Marshal(map[string]string{"cursor": cursor})
	r := bob.call("tools/call", "notes_search", `"name":"notes_search","arguments":`+string(args))
	if f := toolFailure(t, r); f["type"] != "invalid_arguments" || strings.Contains(toJSON(r), "alice ") {
		t.Errorf("bob with alice's cursor: %v", r)
	}
}

// TestDynamoFailureLogged: a DynamoDB error is a retryable tool error,
// and the request's log line carries its cause by type and AWS fields.
func TestDynamoFailureLogged(t *testing.T) {
	local := localDynamoDB(t)
	cfg, err := endpoint.LoadConfig(func(k string) string {
		// The calls quota would meet the missing table first (its counter
		// fails the call closed: package ratelimit's TestLimiter); this
		// reads the tool's own failure.
		return map[string]string{endpoint.EnvAllowAnonymous: "true", endpoint.EnvClaimsTable: "no-such-table", endpoint.EnvLogLevel: "info",
			endpoint.EnvQuotas: "calls=off"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	var log syncbuf.Buffer
	ob := observe.New(&log, observe.Options{Level: cfg.LogLevel, Namespace: cfg.MetricsNamespace, Function: cfg.FunctionName})
	clients := &endpoint.Clients{Configure: local.Configure}
	srv, err := newServerWith(cfg, ob.Logger(), ob, clients)
	if err != nil {
		t.Fatal(err)
	}
	c := &demoClient{t: t, srv: srv, principal: "alice"}
	if f := toolFailure(t, c.add("a note")); f["type"] != "retryable" || f["retryable"] != true {
		t.Errorf("failure %v", f)
	}
	var line map[string]any
	sc := bufio.NewScanner(strings.NewReader(log.String()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "request" {
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no request line:\n%s", log.String())
	}
	for k, v := range map[string]any{"level": "ERROR", "fault": true, "Tool": "notes_add", "aws_service": "DynamoDB",
		"aws_operation": "TransactWriteItems", "aws_error_code": "ResourceNotFoundException"} {
		if line[k] != v {
			t.Errorf("%s = %v, want %v\n%s", k, line[k], v, log.String())
		}
	}
	if ct, _ := line["cause_type"].(string); !strings.Contains(ct, "ResourceNotFoundException") {
		t.Errorf("cause_type %q", ct)
	}
}

// notesPK is notesPart as a DynamoDB attribute value.
func notesPK(owner string) types.AttributeValue {
	return &types.AttributeValueMemberS{Value: notesPart(owner)}
}

func notesKey(pk types.AttributeValue, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": pk, "sk": &types.AttributeValueMemberS{Value: sk}}
}
