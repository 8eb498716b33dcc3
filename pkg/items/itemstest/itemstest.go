// Package itemstest is the contract every items.Table meets. One suite
// runs against the table in memory and against DynamoDB (Local in tests),
// so that a tool written on items behaves the same on both: its writes at
// once, its conditions, its reads, and its writes enlisted in a keyed
// call's claim.
package itemstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/items"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// Pair is a table and the claims store a function would pair it with:
// the claims in the same DynamoDB table, or both in memory.
type Pair struct {
	Table  items.Table
	Claims claims.Store
}

// Run runs the contract against tables made by newPair; each test gets a
// fresh pair, or one whose keys do not collide with other tests'.
func Run(t *testing.T, newPair func(t *testing.T) Pair) {
	ctx := context.Background()
	var seq atomic.Int64
	// pk is a partition no other test (or run) writes.
	pk := func() string { return fmt.Sprintf("itemstest#%d-%d", time.Now().UnixNano(), seq.Add(1)) }

	t.Run("put then get; absent is no error", func(t *testing.T) {
		tb, p := newPair(t).Table, pk()
		if it, ok, err := tb.Get(ctx, items.Key{PK: p, SK: "a"}); err != nil || ok || it != nil {
			t.Fatalf("absent: %v %v %v", it, ok, err)
		}
		mustWrite(t, tb, items.Put(items.Key{PK: p, SK: "a"}, items.Item{"text": items.S("hello"), "n": items.Int(7)}))
		it, ok, err := tb.Get(ctx, items.Key{PK: p, SK: "a"})
		if err != nil || !ok || str(it["text"]) != "hello" || num(it["n"]) != "7" || it["pk"] != nil || len(it) != 2 {
			t.Fatalf("got %v %v %v", it, ok, err)
		}
	})

	t.Run("a failed condition writes nothing and unwraps to its failure", func(t *testing.T) {
		tb, k := newPair(t).Table, items.Key{PK: pk(), SK: "a"}
		mustWrite(t, tb, items.Put(k, items.Item{"v": items.S("first")}).If(items.Absent()))
		refused := mcperr.NewRefused("taken", nil)
		err := tb.Write(ctx, items.Put(k, items.Item{"v": items.S("second")}).If(items.Absent()).OrFail(refused))
		var ce *items.ConditionError
		var te *mcperr.ToolError
		if !errors.As(err, &ce) || ce.Op != 0 || !errors.As(err, &te) || te != refused {
			t.Fatalf("second put: %v", err)
		}
		err = tb.Write(ctx, items.Delete(items.Key{PK: k.PK, SK: "b"}).If(items.Exists()))
		if !errors.As(err, &ce) || ce.Failure != nil || errors.As(err, &te) {
			t.Fatalf("delete of an absent item that must exist: %v", err)
		}
		if it, _, _ := tb.Get(ctx, k); str(it["v"]) != "first" {
			t.Fatalf("after: %v", it)
		}
		mustWrite(t, tb, items.Delete(items.Key{PK: k.PK, SK: "b"}))
	})

	t.Run("a counter stops at its limit", func(t *testing.T) {
		tb, k := newPair(t).Table, items.Key{PK: pk(), SK: "#count"}
		full := mcperr.NewRefused("full", nil)
		for i := range 4 {
			err := tb.Write(ctx, items.Update(k).Add("n", 1).If(items.Less("n", 3)).OrFail(full))
			if (i < 3) != (err == nil) {
				t.Fatalf("add %d: %v", i, err)
			}
		}
		if it, _, _ := tb.Get(ctx, k); num(it["n"]) != "3" {
			t.Fatalf("count %v", it)
		}
		// Down again, never below 0.
		for i := range 4 {
			err := tb.Write(ctx, items.Update(k).Add("n", -1).If(items.AtLeast("n", 1)))
			if (i < 3) != (err == nil) {
				t.Fatalf("subtract %d: %v", i, err)
			}
		}
		// An absent attribute counts as 0.
		fresh := items.Key{PK: k.PK, SK: "#other"}
		if err := tb.Write(ctx, items.Update(fresh).Add("n", -1).If(items.AtLeast("n", 1))); err == nil {
			t.Fatal("subtracting from an absent count")
		}
		mustWrite(t, tb, items.Update(fresh).Set("label", items.S("x")).If(items.AtLeast("n", 0), items.Less("n", 1)))
	})

	t.Run("equal compares numbers as numbers", func(t *testing.T) {
		tb, k := newPair(t).Table, items.Key{PK: pk(), SK: "v"}
		mustWrite(t, tb, items.Update(k).Add("version", 5).Set("owner", items.S("a")))
		stale := mcperr.NewStateChanged("v")
		if err := tb.Write(ctx, items.Update(k).Add("version", 1).If(items.Equal("version", items.Int(4))).OrFail(stale)); !errors.Is(err, stale) {
			t.Fatalf("stale version: %v", err)
		}
		mustWrite(t, tb, items.Update(k).Add("version", 1).If(items.Equal("version", items.N("5.0")), items.Equal("owner", items.S("a"))))
		if err := tb.Write(ctx, items.Put(k, items.Item{}).If(items.Equal("owner", items.Int(0)))); err == nil {
			t.Fatal("a string equal to a number")
		}
		if it, _, _ := tb.Get(ctx, k); num(it["version"]) != "6" {
			t.Fatalf("version %v", it)
		}
	})

	t.Run("a string set holds a member once", func(t *testing.T) {
		tb, k := newPair(t).Table, items.Key{PK: pk(), SK: "#runs"}
		for _, run := range []string{"a", "b", "a"} {
			mustWrite(t, tb, items.Update(k).Include("runs", run).Set("expires_at", items.Int(2_000_000_000)))
		}
		it, _, _ := tb.Get(ctx, k)
		ss, _ := it["runs"].(*types.AttributeValueMemberSS)
		if ss == nil || len(ss.Value) != 2 || !slices.Contains(ss.Value, "a") || !slices.Contains(ss.Value, "b") {
			t.Fatalf("runs %#v", it["runs"])
		}
		if err := tb.Write(ctx, items.Update(k).Include("expires_at", "x")); !errors.Is(err, items.ErrInvalid) {
			t.Fatalf("including a member in a number: %v", err)
		}
	})

	t.Run("several writes are all or none", func(t *testing.T) {
		tb, p := newPair(t).Table, pk()
		a, b := items.Key{PK: p, SK: "a"}, items.Key{PK: p, SK: "b"}
		mustWrite(t, tb, items.Put(b, items.Item{"v": items.S("b")}))
		err := tb.Write(ctx, items.Update(a).Add("n", 1), items.Put(b, items.Item{"v": items.S("b2")}).If(items.Absent()))
		var ce *items.ConditionError
		if !errors.As(err, &ce) || ce.Op != 1 {
			t.Fatalf("write: %v", err)
		}
		if _, ok, _ := tb.Get(ctx, a); ok {
			t.Fatal("the first write was made though the second's condition failed")
		}
		mustWrite(t, tb, items.Update(a).Add("n", 1), items.Delete(b).If(items.Exists()))
		if _, ok, _ := tb.Get(ctx, b); ok {
			t.Fatal("b not deleted")
		}
	})

	t.Run("query reads a partition in order, a page at a time", func(t *testing.T) {
		tb, p := newPair(t).Table, pk()
		for _, sk := range []string{"n3", "n1", "#count", "n2"} {
			mustWrite(t, tb, items.Put(items.Key{PK: p, SK: sk}, items.Item{"sk2": items.S(sk)}))
		}
		got, more, err := tb.Query(ctx, p, "#count", 2)
		if err != nil || !more || len(got) != 2 || got[0].SK != "n1" || got[1].SK != "n2" || str(got[1].Item["sk2"]) != "n2" {
			t.Fatalf("first page: %+v %v %v", got, more, err)
		}
		got, more, err = tb.Query(ctx, p, got[1].SK, 2)
		if err != nil || more || len(got) != 1 || got[0].SK != "n3" {
			t.Fatalf("second page: %+v %v %v", got, more, err)
		}
		got, more, err = tb.Query(ctx, p, "", 10)
		if err != nil || more || len(got) != 4 || got[0].SK != "#count" {
			t.Fatalf("whole: %+v %v %v", got, more, err)
		}
		if got, more, err := tb.Query(ctx, pk(), "", 10); err != nil || more || len(got) != 0 {
			t.Fatalf("empty partition: %+v %v %v", got, more, err)
		}
	})

	t.Run("invalid writes are refused before anything is written", func(t *testing.T) {
		tb, p := newPair(t).Table, pk()
		k := items.Key{PK: p, SK: "a"}
		for name, ops := range map[string][]items.Op{
			"reserved prefix":   {items.Put(items.Key{PK: "claim#x", SK: "a"}, items.Item{})},
			"empty key":         {items.Put(items.Key{PK: p}, items.Item{})},
			"one item twice":    {items.Update(k).Add("n", 1), items.Delete(k)},
			"key as attribute":  {items.Put(k, items.Item{"pk": items.S("x")})},
			"update of nothing": {items.Update(k)},
			"nil value":         {items.Update(k).Set("v", nil)},
		} {
			if err := tb.Write(ctx, append(ops, items.Put(items.Key{PK: p, SK: "other"}, items.Item{}))...); !errors.Is(err, items.ErrInvalid) {
				t.Errorf("%s: %v", name, err)
			}
		}
		if err := tb.Write(ctx, items.Put(items.Key{PK: "task#x", SK: "a"}, items.Item{})); !errors.Is(err, claims.ErrReservedKey) {
			t.Errorf("reserved: %v", err)
		}
		if got, _, _ := tb.Query(ctx, p, "", 10); len(got) != 0 {
			t.Fatalf("written: %+v", got)
		}
		// An Add to an attribute that is not a number: the store refuses
		// it, a fault of the tool's.
		mustWrite(t, tb, items.Put(k, items.Item{"n": items.S("five")}))
		if err := tb.Write(ctx, items.Update(k).Add("n", 1)); !errors.Is(err, items.ErrInvalid) {
			t.Errorf("adding to a string: %v", err)
		}
	})

	t.Run("a keyed call's writes are made once", func(t *testing.T) {
		pair := newPair(t)
		r := newRig(t, pair)
		for _, tool := range []string{"bump_one_step", "bump_claimed"} {
			k := items.Key{PK: pk(), SK: "#count"}
			for i := range 3 {
				a := r.c.CallTool(tool, map[string]any{"pk": k.PK, "limit": 5}, mcptest.IdempotencyKey("key-"+k.PK))
				if a.IsError() || a.Replayed() != (i > 0) {
					t.Fatalf("%s call %d: %s", tool, i, a.Raw)
				}
			}
			if it, _, _ := pair.Table.Get(ctx, k); num(it["n"]) != "1" {
				t.Fatalf("%s: the count is %v after three calls with one key", tool, it)
			}
			// Unkeyed, every call writes.
			for range 2 {
				if a := r.c.CallTool(tool, map[string]any{"pk": k.PK, "limit": 5}); a.IsError() {
					t.Fatalf("%s unkeyed: %s", tool, a.Raw)
				}
			}
			if it, _, _ := pair.Table.Get(ctx, k); num(it["n"]) != "3" {
				t.Fatalf("%s: the count is %v, want 3", tool, it)
			}
		}
	})

	t.Run("a keyed call whose condition fails is answered with its failure", func(t *testing.T) {
		pair := newPair(t)
		r := newRig(t, pair)
		k := items.Key{PK: pk(), SK: "#count"}
		mustWrite(t, pair.Table, items.Update(k).Add("n", 2))
		a := r.c.CallTool("bump_one_step", map[string]any{"pk": k.PK, "limit": 2}, mcptest.IdempotencyKey("full-"+k.PK))
		if !a.IsError() || a.Error != nil || !strings.Contains(string(a.Raw), `"count_full"`) {
			t.Fatalf("answer: %s", a.Raw)
		}
		if it, _, _ := pair.Table.Get(ctx, k); num(it["n"]) != "2" {
			t.Fatalf("count %v", it)
		}
		// Nothing was stored for the key: with room, its retry runs.
		mustWrite(t, pair.Table, items.Update(k).Add("n", -1))
		a = r.c.CallTool("bump_one_step", map[string]any{"pk": k.PK, "limit": 2}, mcptest.IdempotencyKey("full-"+k.PK))
		if a.IsError() || a.Replayed() {
			t.Fatalf("retry: %s", a.Raw)
		}
		if it, _, _ := pair.Table.Get(ctx, k); num(it["n"]) != "2" {
			t.Fatalf("count after the retry %v", it)
		}
	})
}

// rig serves two tools that add one to a counter item under its limit:
// bump_one_step, declared to have no effect but its writes (committed in
// one step with its claim), and bump_claimed, claimed first.
type rig struct{ c *mcptest.Client }

func newRig(t *testing.T, p Pair) *rig {
	g := claims.New(p.Claims, nil)
	srv := stateless.NewServer(stateless.Implementation{Name: "itemstest", Version: "1"}, &stateless.Options{
		SchemaEngine: toolschema.Engine{}, Interceptors: []stateless.Interceptor{g.Interceptor()}})
	type in struct {
		PK    string `json:"pk"`
		Limit int64  `json:"limit"`
	}
	bump := func(ctx context.Context, _ *stateless.ToolRequest, a in) (*stateless.CallToolResult, map[string]any, error) {
		err := p.Table.Write(ctx, items.Update(items.Key{PK: a.PK, SK: "#count"}).Add("n", 1).
			If(items.Less("n", a.Limit)).OrFail(mcperr.NewRefused("count_full", nil)))
		return nil, map[string]any{"bumped": true}, err
	}
	stateless.AddTool(srv, &stateless.Tool{Name: "bump_one_step", EnlistedEffectsOnly: true}, bump)
	stateless.AddTool(srv, &stateless.Tool{Name: "bump_claimed"}, bump)
	if err := srv.Verify(); err != nil {
		t.Fatal(err)
	}
	return &rig{c: mcptest.New(t, srv)}
}

func mustWrite(t *testing.T, tb items.Table, ops ...items.Op) {
	t.Helper()
	if err := tb.Write(context.Background(), ops...); err != nil {
		t.Fatal(err)
	}
}

func str(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return fmt.Sprintf("not a string: %#v", v)
}

func num(v types.AttributeValue) string {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return fmt.Sprintf("not a number: %#v", v)
}
