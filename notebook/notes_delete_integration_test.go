//go:build integration

package notebook

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/ddbfault"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// faultyDemo is the demo server as main builds it, on DynamoDB Local,
// with faults injected into its table client.
func faultyDemo(t *testing.T) (*stateless.Server, *ddbfault.Faults) {
	t.Helper()
	local := localDynamoDB(t)
	cfg, err := endpoint.LoadConfig(func(k string) string {
		return map[string]string{endpoint.EnvAllowAnonymous: "true", endpoint.EnvClaimsTable: notesTable}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &ddbfault.Faults{}
	clients := &endpoint.Clients{Configure: func(c *aws.Config) {
		local.Configure(c)
		c.APIOptions = append(c.APIOptions, f.Middleware)
	}}
	srv, err := newServerWith(cfg, discardLogger(), nil, clients)
	if err != nil {
		t.Fatal(err)
	}
	return srv, f
}

// notCommitted reports whether r is the retryable refusal of a call whose
// effect was not committed.
func notCommitted(r map[string]any) bool {
	e, _ := r["error"].(map[string]any)
	d, _ := e["data"].(map[string]any)
	return e["code"] == float64(-32603) && d["type"] == "idempotency_not_committed" && d["retryable"] == true
}

func isReplay(r map[string]any) bool {
	meta, _ := r["_meta"].(map[string]any)
	return meta[stateless.MetaReplay] == true
}

// TestConfirmedDeleteSurvivesAFailure: the table fails during a confirmed
// notes_delete, whose confirmation is single-use. Keyed, the delete is
// enlisted in the claim's completion, which cannot be committed: the
// client is told to retry, and the retry with the same state and key
// deletes the note; a retry of that, after a lost response, gets the
// replay; the state is spent for any other call. Unkeyed, the tool's own
// write fails retryably, and the retry with the same state deletes it.
// Either way the note's deletion record counts one delete.
func TestConfirmedDeleteSurvivesAFailure(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		t.Run(fmt.Sprint("keyed=", keyed), func(t *testing.T) {
			srv, faults := faultyDemo(t)
			c := &demoClient{t: t, srv: srv, principal: "delete-" + t.Name(), caps: `{"elicitation":{}}`, timeout: 3 * time.Second}
			id, _ := structured(c.add("Call Ada"))["id"].(string)
			if id == "" {
				t.Fatal("no note")
			}
			args := `"name":"notes_delete","arguments":{"id":"` + id + `"}`
			state, _ := c.call("tools/call", "notes_delete", args)["requestState"].(string)
			if state == "" {
				t.Fatal("no confirmation asked")
			}
			confirmed := args + `,"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":"` + state + `"`
			retry := confirmed
			if keyed {
				retry += `,"idempotencyKey":"delete-` + id + `"`
				faults.Set(nil, map[string]int{"TransactWriteItems": ddbfault.All})
				if r := c.call("tools/call", "notes_delete", retry); !notCommitted(r) {
					t.Fatalf("the failed commit: %v", r)
				}
			} else {
				faults.Set(nil, map[string]int{"TransactWriteItems": ddbfault.All})
				if f := toolFailure(t, c.call("tools/call", "notes_delete", retry)); f["retryable"] != true {
					t.Fatalf("the failed write: %v", f)
				}
			}
			faults.Set(nil, nil)
			r := c.call("tools/call", "notes_delete", retry)
			for i := 0; i < 20 && strings.Contains(toJSON(r), "idempotency_key_in_progress"); i++ {
				// The claim could not be released in the time left: it
				// lapses with its lease, as a client that follows the
				// retry-after hint sees.
				time.Sleep(500 * time.Millisecond)
				r = c.call("tools/call", "notes_delete", retry)
			}
			if structured(r)["deleted"] != true || isReplay(r) {
				t.Fatalf("the retry: %v", r)
			}
			if keyed {
				if r := c.call("tools/call", "notes_delete", retry); !isReplay(r) || structured(r)["deleted"] != true {
					t.Errorf("the retry of the retry: %v", r)
				}
			}
			for _, other := range []string{confirmed, confirmed + `,"idempotencyKey":"another"`} {
				if r := c.call("tools/call", "notes_delete", other); !strings.Contains(toJSON(r), "-32602") {
					t.Errorf("the spent state: %v", r)
				}
			}
			if ids, _ := c.search("", ""); len(ids) != 0 {
				t.Errorf("notes left: %v", ids)
			}
			// The failed attempt left no trace, the retry deleted once:
			// the deletion record, written with the delete, counts 1.
			table := dynamoNotes(localDynamoDB(t).Client(), notesTable, 0)
			if n, err := table.deletions(context.Background(), c.principal, id); err != nil || n != 1 {
				t.Errorf("the deletion record counts %d (%v), want 1", n, err)
			}
		})
	}
}

// countNotes counts the owner's notes whose text is text, and reads the
// owner's counter, straight from the table.
func countNotes(t *testing.T, owner, text string) (matching, counter int) {
	t.Helper()
	c := localDynamoDB(t).Client()
	out, err := c.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(notesTable),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": notesPK(owner)}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		if sk := it["sk"].(*types.AttributeValueMemberS).Value; sk == counterSK {
			counter = int(numAttr(it, "notes"))
		} else if it["text"].(*types.AttributeValueMemberS).Value == text {
			matching++
		}
	}
	return matching, counter
}

// TestKeyedAddExactlyOnce: a keyed notes_add whose commit's answer is lost
// (once, or on every attempt) or cannot be sent adds its note exactly
// once, whatever the client is told, and the client is never told it
// failed for good.
func TestKeyedAddExactlyOnce(t *testing.T) {
	for name, f := range map[string]struct{ lose, fail map[string]int }{
		"answer lost once":        {lose: map[string]int{"TransactWriteItems": 1}},
		"every answer lost":       {lose: map[string]int{"TransactWriteItems": ddbfault.All}},
		"commit cannot be sent":   {fail: map[string]int{"TransactWriteItems": ddbfault.All}},
		"count cannot be read":    {fail: map[string]int{"GetItem": ddbfault.All}},
		"claim's answer lost":     {lose: map[string]int{"PutItem": 1}},
		"every claim answer lost": {lose: map[string]int{"PutItem": ddbfault.All}},
	} {
		t.Run(name, func(t *testing.T) {
			srv, faults := faultyDemo(t)
			c := &demoClient{t: t, srv: srv, principal: "once-" + t.Name(), timeout: 3 * time.Second}
			text := "once " + name
			args := `"name":"notes_add","arguments":{"text":"` + text + `"},"idempotencyKey":"k-` + name + `"`
			faults.Set(f.lose, f.fail)
			first := c.call("tools/call", "notes_add", args)
			faults.Set(nil, nil)
			if structured(first)["id"] == nil {
				// Not done, or not known to be: a retryable answer.
				if !strings.Contains(toJSON(first), `"retryable":true`) {
					t.Fatalf("first answer: %v", first)
				}
			}
			// The client retries until it has an answer that is not "retry".
			var last map[string]any
			for range 40 {
				last = c.call("tools/call", "notes_add", args)
				if !strings.Contains(toJSON(last), `"retryable":true`) {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			if structured(last)["id"] == nil {
				t.Fatalf("the retries: %v", last)
			}
			if id := structured(first)["id"]; id != nil && id != structured(last)["id"] {
				t.Errorf("the retry answered note %v, the first %v", structured(last)["id"], id)
			}
			if n, count := countNotes(t, c.principal, text); n != 1 || count != 1 {
				t.Errorf("%d notes, counter %d; want 1 and 1", n, count)
			}
		})
	}
}

// TestKeyedAddAtTheLimit: keyed adds to a book one note short of its
// limit, at once: one adds the note; the others are told the book is full
// (their read saw it full) or to retry (their commit found it full), and
// their retries are told it is full. The book never goes over.
func TestKeyedAddAtTheLimit(t *testing.T) {
	const limit = 3
	client := localDynamoDB(t).Client()
	g := claims.New(claims.NewDynamoDBWith(client, notesTable, claims.DynamoDBOptions{SortKey: endpoint.TableSortKey}), nil)
	srv := taskServer(stateless.Implementation{Name: "limit", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Interceptors: []stateless.Interceptor{g.Interceptor()}})
	(&demo{notes: dynamoNotes(client, notesTable, limit)}).register(srv)
	c := &demoClient{t: t, srv: srv, principal: fmt.Sprint("limit-", time.Now().UnixNano()), timeout: 5 * time.Second}
	for i := range limit - 1 {
		if structured(c.add(fmt.Sprint("note ", i)))["id"] == nil {
			t.Fatal("setting up")
		}
	}
	const racers = 6
	answers := raceAdds(c, racers)
	added, full := 0, 0
	for i, r := range answers {
		for attempt := 0; notCommitted(r) && attempt < 5; attempt++ {
			r = c.call("tools/call", "notes_add", fmt.Sprintf(`"name":"notes_add","arguments":{"text":"racer"},"idempotencyKey":"racer-%d"`, i))
		}
		switch addedOrFull(t, r) {
		case "added":
			added++
		case "full":
			full++
		default:
			t.Errorf("racer %d: %v", i, r)
		}
	}
	if added != 1 || full != racers-1 {
		t.Errorf("%d added, %d told the book is full", added, full)
	}
	if n, count := countNotes(t, c.principal, "racer"); n != 1 || count != limit {
		t.Errorf("%d racer notes, counter %d; want 1 and %d", n, count, limit)
	}
}
