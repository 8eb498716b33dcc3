//go:build integration

package main

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/middleware"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// TestConfirmedDeleteSurvivesAFailure: the note book's write fails during
// a confirmed notes_delete, whose confirmation is single-use. The failure
// is retryable, and the retry with the same state and key deletes the
// note; a retry of that, after a lost response, gets the replay; the
// state is spent for any other call.
func TestConfirmedDeleteSurvivesAFailure(t *testing.T) {
	local := localDynamoDB(t)
	cfg, err := LoadConfig(func(k string) string {
		return map[string]string{envAllowAnonymous: "true", envClaimsTable: notesTable}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	var failWrite atomic.Bool
	clients := &awsClients{configure: func(c *aws.Config) {
		c.BaseEndpoint = aws.String(local.Endpoint)
		c.Region = "us-east-1"
		c.Credentials = credentials.NewStaticCredentialsProvider("local", "local", "")
		c.APIOptions = append(c.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("fault", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				if awsmiddleware.GetOperationName(ctx) == "TransactWriteItems" && failWrite.CompareAndSwap(true, false) {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, errors.New("the note book's table failed")
				}
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
		})
	}}
	srv, err := newServerWith(cfg, discardLogger(), nil, clients)
	if err != nil {
		t.Fatal(err)
	}
	c := &demoClient{t: t, srv: srv, principal: "delete-" + t.Name(), caps: `{"elicitation":{}}`}
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
	keyed := confirmed + `,"idempotencyKey":"delete-` + id + `"`

	failWrite.Store(true)
	if f := toolFailure(t, c.call("tools/call", "notes_delete", keyed)); f["retryable"] != true {
		t.Fatalf("the failed write: %v", f)
	}
	if r := c.call("tools/call", "notes_delete", keyed); structured(r)["deleted"] != true {
		t.Fatalf("the retry: %v", r)
	}
	r := c.call("tools/call", "notes_delete", keyed)
	if meta, _ := r["_meta"].(map[string]any); meta[stateless.MetaReplay] != true || structured(r)["deleted"] != true {
		t.Errorf("the retry of the retry: %v", r)
	}
	for _, other := range []string{confirmed, confirmed + `,"idempotencyKey":"another"`} {
		if r := c.call("tools/call", "notes_delete", other); !strings.Contains(toJSON(r), "-32602") {
			t.Errorf("the spent state: %v", r)
		}
	}
	if ids, _ := c.search("", ""); len(ids) != 0 {
		t.Errorf("notes left: %v", ids)
	}
}
