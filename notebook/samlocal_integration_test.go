//go:build integration

package notebook

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/eventcheck"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/fntest"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/samlocal"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
)

const (
	samEnvFile  = "../deploy/sam-local-env.json"
	samKMSSeed  = "../deploy/local-kms-seed.yaml"
	samFunction = "McpFunction"
)

// allowedOps are the AWS operations template.yaml lets the function call:
// the function under the env file must need no other.
var allowedOps = []string{
	"DynamoDB_20120810.PutItem", "DynamoDB_20120810.GetItem", "DynamoDB_20120810.UpdateItem", "DynamoDB_20120810.DeleteItem",
	"DynamoDB_20120810.Query",
	// The listen streams' event log appends in batches.
	"DynamoDB_20120810.BatchWriteItem",
	// A transaction's writes are authorized as PutItem, UpdateItem and
	// DeleteItem: the note book's adds and deletes need no more.
	"DynamoDB_20120810.TransactWriteItems",
	"TrentService.GenerateDataKey", "TrentService.Decrypt",
}

// TestSAMLocalEnvironment runs every sample event through the real
// bootstrap under the Lambda Runtime Interface Emulator (what `sam local
// invoke` runs in its container) with the environment `sam local invoke
// --env-vars deploy/sam-local-env.json` gives it: DynamoDB Local with the
// table and local-kms seeded from deploy/local-kms-seed.yaml, the
// endpoints moved only to this run's ports. Each answer must match the
// event's expected response, and the table and the key must really have
// been used: counting proxies in front of both servers see each AWS
// operation the function makes, and the table is read back.
//
// Each event gets a fresh table and a fresh emulator process (as each sam
// local invoke gets a fresh container), so that one event's notes never
// show in another's answer; a replay event's predecessor runs first, in a
// process of its own against the same table, so the replay can only come
// from the table.
func TestSAMLocalEnvironment(t *testing.T) {
	riePath := fntest.RIEBinary(t)
	bootstrap := fntest.BuildBootstrap(t, "../functions/fixture", fntest.HostArch)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	fileEnv, err := samlocal.ReadEnv(samEnvFile, samFunction)
	if err != nil {
		t.Fatal(err)
	}
	stack, err := samlocal.StartStack(ctx, fileEnv, samlocal.StackOptions{SeedPath: samKMSSeed})
	if err != nil {
		t.Fatal(err)
	}
	defer stack.Stop()
	ddb := newCountingProxy(t, stack.DynamoDB.Endpoint)
	kms := newCountingProxy(t, stack.KMS.Endpoint)
	env, err := samlocal.WithEndpoint(fileEnv, samlocal.EnvDynamoDBEndpoint, ddb.addr)
	if err != nil {
		t.Fatal(err)
	}
	if env, err = samlocal.WithEndpoint(env, samlocal.EnvKMSEndpoint, kms.addr); err != nil {
		t.Fatal(err)
	}
	for k, v := range fileEnv {
		if env[k] != v && k != samlocal.EnvDynamoDBEndpoint && k != samlocal.EnvKMSEndpoint {
			t.Fatalf("%s changed from the file's value", k)
		}
	}
	full := samlocal.SAMDefaults(samFunction)
	maps.Copy(full, env)
	environ := samlocal.Environ(full)

	// invoke runs one event in a fresh emulator process and returns its
	// answer, checked against the expected response, and the operations
	// it made.
	catalogs := 0 // the catalog's records, over every instance
	invoke := func(t *testing.T, event string) ([]byte, map[string]int) {
		t.Helper()
		ddb.take()
		kms.take()
		e, err := rie.Start(ctx, rie.Options{RIE: riePath, Bootstrap: bootstrap, Env: environ})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Stop()
		payload, err := os.ReadFile(event)
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Invoke(ctx, payload)
		if err != nil {
			t.Fatalf("%s: %v\n%s", filepath.Base(event), err, e.Log())
		}
		fntest.CheckExpected(t, event, out, false)
		if strings.Contains(e.Log(), "panic") {
			t.Errorf("the function panicked:\n%s", e.Log())
		}
		ops := ddb.take()
		maps.Copy(ops, kms.take())
		// A fresh process records its catalog once, in one request, or
		// not yet when the event was answered first.
		if n := ops[catalogOp]; n > 1 {
			t.Errorf("%s: the catalog was recorded %d times by one instance", filepath.Base(event), n)
		}
		catalogs += ops[catalogOp]
		delete(ops, catalogOp)
		for op := range ops {
			if !slices.Contains(allowedOps, op) {
				t.Errorf("%s: the function called %s, which template.yaml does not allow it", filepath.Base(event), op)
			}
		}
		if t.Failed() {
			t.Logf("function log:\n%s", e.Log())
		}
		return out, ops
	}

	stateful := 0
	defer func() {
		if catalogs == 0 {
			t.Error("no instance recorded its catalog")
		}
	}()
	for _, ev := range fntest.Events(t, "events") {
		name := filepath.Base(ev)
		t.Run(name, func(t *testing.T) {
			if err := stack.ResetTable(ctx); err != nil {
				t.Fatal(err)
			}
			var first []byte
			if b := eventcheck.Predecessor(ev); b != "" {
				first, _ = invoke(t, b)
			}
			out, ops := invoke(t, ev)
			switch name {
			case "notes-add.json", "notes-add-keyed.json":
				// An add writes the note's own item and counts it, in one
				// transaction; a keyed add makes that same transaction the
				// claim's too (the claim put as completed, the note, the
				// count and the result: notes_add commits in one step),
				// with nothing claimed or read before. Every call is
				// counted by the calls quota first (one UpdateItem).
				wantOps(t, ops, map[string]int{"DynamoDB_20120810.TransactWriteItems": 1, "DynamoDB_20120810.UpdateItem": 1,
					"DynamoDB_20120810.GetItem": 0}, "DynamoDB_20120810.PutItem", 0)
				items := scanTable(t, ctx, stack)
				notes := noteIDs(t, items)
				if id := answeredID(t, out); len(notes) != 1 || notes[0] != id {
					t.Errorf("the table holds notes %v, want the one answered, %s", notes, id)
				}
				if counts := noteCounts(items); len(counts) != 1 || counts[0] != 1 {
					t.Errorf("note counts %v, want one owner with 1", counts)
				}
				if claims := completedClaims(items); claims != btoi(name == "notes-add-keyed.json") {
					t.Errorf("%d completed claims in the table", claims)
				}
				stateful++
			case "notes-add-keyed-replay.json":
				// The replay is answered from the claim its predecessor's
				// process left in the table: the same one-step transaction,
				// cancelled by the claim's condition, which returns the
				// holder (ALL_OLD): no read, no note written (and the calls
				// quota's count).
				wantOps(t, ops, map[string]int{"DynamoDB_20120810.PutItem": 0, "DynamoDB_20120810.GetItem": 0, "DynamoDB_20120810.TransactWriteItems": 1}, "DynamoDB_20120810.UpdateItem", 1)
				items := scanTable(t, ctx, stack)
				if notes := noteIDs(t, items); len(notes) != 1 || notes[0] != answeredID(t, first) || answeredID(t, out) != notes[0] {
					t.Errorf("after the replay the table holds notes %v; first answer %s, replay %s", notes, answeredID(t, first), answeredID(t, out))
				}
				if completedClaims(items) != 1 {
					t.Errorf("want the one completed claim in the table: %v", items)
				}
				stateful++
			case "notes-delete-first-round.json":
				// The confirmation's request state is sealed under a data
				// key that local-kms generated from the seeded key.
				wantOps(t, ops, map[string]int{"TrentService.GenerateDataKey": 1}, "TrentService.Decrypt", 0)
				stateful++
			case "notes-search.json", "jwt-notes-search.json", "notes-digest.json", "prompts-get.json":
				// Read a page of the caller's notes from the (empty)
				// table with one Query (the prompt quotes them): no
				// claim; the one write is the calls quota's count.
				wantOps(t, ops, map[string]int{"DynamoDB_20120810.Query": 1, "DynamoDB_20120810.GetItem": 0}, "DynamoDB_20120810.UpdateItem", 1)
				stateful++
			case "missing-capability.json":
				// The delete looks its note up before it asks for a
				// confirmation it cannot get: one GetItem; the one write
				// is the calls quota's count.
				wantOps(t, ops, map[string]int{"DynamoDB_20120810.GetItem": 1, "DynamoDB_20120810.Query": 0}, "DynamoDB_20120810.UpdateItem", 1)
				stateful++
			case "resources-read.json":
				// The readme resource is the server's own text: the calls
				// quota's count is its one AWS call.
				wantOps(t, ops, map[string]int{"DynamoDB_20120810.UpdateItem": 1}, "DynamoDB_20120810.PutItem", 0)
				if len(ops) != 1 {
					t.Errorf("%s made AWS calls %v", name, ops)
				}
			default:
				// Everything else (discovery, the lists, the refusals)
				// answers without AWS: the clients are made on first use
				// only, and the calls quota counts only calls.
				if len(ops) != 0 {
					t.Errorf("%s made AWS calls %v", name, ops)
				}
			}
		})
	}
	if stateful != 9 {
		t.Errorf("%d events exercised the table or the key, want 9: has an event been renamed?", stateful)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// wantOps checks that ops include want exactly, and that op was made n
// times.
func wantOps(t *testing.T, ops, want map[string]int, op string, n int) {
	t.Helper()
	for k, v := range want {
		if ops[k] != v {
			t.Errorf("%s: %d calls, want %d (all: %v)", k, ops[k], v, ops)
		}
	}
	if ops[op] != n {
		t.Errorf("%s: %d calls, want %d (all: %v)", op, ops[op], n, ops)
	}
}

type tableItem struct {
	PK     string `dynamodbav:"pk"`
	SK     string `dynamodbav:"sk"`
	Status string `dynamodbav:"status"`
	Notes  int    `dynamodbav:"notes"`
}

func scanTable(t *testing.T, ctx context.Context, s *samlocal.Stack) []tableItem {
	t.Helper()
	out, err := s.DynamoDB.Client().Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.Table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var items []tableItem
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &items); err != nil {
		t.Fatal(err)
	}
	return items
}

// noteIDs are the ids of the note items (one per note).
func noteIDs(t *testing.T, items []tableItem) []string {
	t.Helper()
	var ids []string
	for _, it := range items {
		if strings.HasPrefix(it.PK, "notes#") && it.SK != counterSK {
			if !validNoteID(it.SK) {
				t.Errorf("note item with sort key %q", it.SK)
			}
			ids = append(ids, it.SK)
		}
	}
	return ids
}

// noteCounts are the owners' note counts.
func noteCounts(items []tableItem) []int {
	var counts []int
	for _, it := range items {
		if strings.HasPrefix(it.PK, "notes#") && it.SK == counterSK {
			counts = append(counts, it.Notes)
		}
	}
	return counts
}

func completedClaims(items []tableItem) int {
	n := 0
	for _, it := range items {
		if strings.HasPrefix(it.PK, "claim#") && it.SK == claims.ClaimSortValue && it.Status == "completed" {
			n++
		}
	}
	return n
}

// answeredID is the note id in a notes_add answer.
func answeredID(t *testing.T, payload []byte) string {
	t.Helper()
	var resp struct {
		Body string `json:"body"`
	}
	var body struct {
		Result struct {
			StructuredContent struct {
				ID string `json:"id"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(payload, &resp); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		t.Fatal(err)
	}
	if body.Result.StructuredContent.ID == "" {
		t.Fatalf("no note id in %s", payload)
	}
	return body.Result.StructuredContent.ID
}

// catalogOp counts the requests that record the endpoint's catalog.
const catalogOp = "catalog"

// countingProxy is a loopback reverse proxy in front of an AWS API
// emulator that counts the operations (X-Amz-Target) passing through it:
// what the function, in another process, asked of the service.
type countingProxy struct {
	addr string
	mu   sync.Mutex
	ops  map[string]int
}

func newCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{ops: map[string]int{}}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := r.Header.Get("X-Amz-Target")
		if body, err := io.ReadAll(r.Body); err == nil {
			// The record of the catalog, which a starting instance makes
			// beside its first request (stateless.Server.AnnounceCatalog),
			// is counted apart: it belongs to no one event.
			if bytes.Contains(body, []byte(`"catalog#`)) {
				op = catalogOp
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		p.mu.Lock()
		p.ops[op]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.addr = strings.TrimPrefix(srv.URL, "http://")
	if !strings.HasPrefix(p.addr, "127.0.0.1:") {
		t.Fatalf("proxy not on loopback: %s", srv.URL)
	}
	return p
}

// take returns the counts so far and starts again from zero.
func (p *countingProxy) take() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	ops := p.ops
	p.ops = map[string]int{}
	return ops
}
