package abuse

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/e2e/internal/harness"
)

// rig is a target with one honest and one hostile actor, and helpers to
// plant exchanges, log lines, table requests and tasks.
type rig struct {
	t        *testing.T
	target   *Target
	h, x     *Actor
	in       Input
	seq      int
	windowAt time.Time
}

func newRig(t *testing.T, exact bool) *rig {
	tg := NewTarget(0, "lambda", "http://127.0.0.1:1/mcp")
	tg.Lambda, tg.Table, tg.Exact, tg.Listener = exact, true, exact, "i*"
	tg.Quotas = Quotas{Calls: 4, Window: 20 * time.Second, Tasks: 2}
	r := &rig{t: t, target: tg, windowAt: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
	r.h = tg.Honest("h1", "honest-1", "127.0.0.2")
	r.x = tg.Hostile("mallory", "mallory", "127.0.0.66", "")
	r.in = Input{Target: tg, Tasks: map[*Actor][]*TaskRun{}, Roles: map[*Actor]Role{r.x: Flood}, Settled: r.windowAt.Add(time.Minute)}
	return r
}

// do plants an exchange of a, sent at offset into the window, answered
// 10 ms later: ok, or refused with the error type and the log cause.
func (r *rig) do(a *Actor, behaviour, method string, at time.Duration, refused, cause string) *Exchange {
	r.seq++
	e := &Exchange{Actor: a, Behaviour: behaviour, Method: method, Trace: fmt.Sprintf("%032x", r.seq), RequestID: fmt.Sprintf("abuse-%07d", r.seq),
		Sent: r.windowAt.Add(at), Done: r.windowAt.Add(at + 10*time.Millisecond), Status: 200}
	outcome := "ok"
	if refused != "" {
		e.Error = &harness.RPCError{Code: -32603, Data: map[string]any{"type": refused}}
		outcome = refused
	} else {
		e.Result = map[string]any{"content": []any{}}
	}
	r.in.Exchanges = append(r.in.Exchanges, e)
	r.in.Lines = append(r.in.Lines, Line{Source: "i0.log", Time: e.Done, Level: "INFO", Method: method, Outcome: outcome, Cause: cause,
		Trace: e.Trace, GatewayID: e.RequestID})
	return e
}

// write plants a DynamoDB write made by e's request.
func (r *rig) write(e *Exchange, name, key string, count int64, status int) {
	r.in.Ops = append(r.in.Ops, Op{Listener: "i0", Tag: e.RequestID, Name: name, Keys: []string{key}, Count: count, Status: status, At: e.Sent.Add(time.Millisecond)})
}

func (r *rig) task(a *Actor, created, ended time.Duration) {
	e := &Exchange{Actor: a, Sent: r.windowAt.Add(created - 5*time.Millisecond), Done: r.windowAt.Add(created)}
	tr := &TaskRun{Create: e, ID: fmt.Sprintf("t%d", len(r.in.Tasks[a])), Status: "completed", CreatedAt: r.windowAt.Add(created - 5*time.Millisecond),
		UpdatedAt: r.windowAt.Add(ended)}
	r.in.Tasks[a] = append(r.in.Tasks[a], tr)
}

func (r *rig) check() map[string][]Violation {
	f := Check(r.in)
	out := map[string][]Violation{}
	for _, v := range f.Violations {
		out[v.Check] = append(out[v.Check], v)
	}
	return out
}

// clean plants a run that breaks nothing: honest calls served, the
// hostile's flood admitted up to the quota and then refused, its one
// exhausting write, the charge of a task start refused for live tasks
// and a slot race it lost, tasks that follow each other.
func (r *rig) clean() {
	for i := range 3 {
		e := r.do(r.h, "search", "tools/call", time.Duration(i)*time.Second, "", "")
		r.write(e, "UpdateItem", "rate#h#1", int64(i+1), 200)
	}
	for i := range 4 {
		e := r.do(r.x, "flood", "tools/call", time.Duration(i)*100*time.Millisecond, "", "")
		r.write(e, "UpdateItem", "rate#x#1", int64(i+1), 200)
	}
	e := r.do(r.x, "flood", "tools/call", 500*time.Millisecond, "rate_limited", "ratelimit: over the limit for this window")
	r.write(e, "UpdateItem", "rate#x#1", 5, 200)
	r.do(r.x, "flood", "tools/call", 600*time.Millisecond, "rate_limited", "ratelimit: over the limit for this window")
	r.do(r.x, "flood", "tasks/get", 700*time.Millisecond, "", "")
	r.task(r.x, time.Second, 6*time.Second)
	r.task(r.x, time.Second, 6*time.Second)
	r.task(r.x, 6*time.Second, 11*time.Second)
}

// TestCheckClean: a run that breaks no promise has no violation, and its
// figures count what it planted.
func TestCheckClean(t *testing.T) {
	r := newRig(t, true)
	r.clean()
	f := Check(r.in)
	if len(f.Violations) > 0 {
		t.Fatalf("violations: %+v", f.Violations)
	}
	if f.HonestCallsServed != 3 || f.Hostile["mallory flood"].Admitted != 5 || f.Hostile["mallory flood"].Refused != 2 ||
		f.RefusedBy[CauseCalls] != 2 || f.MostInWindow["mallory"] != 4 || f.LiveMost["mallory"] != 2 ||
		f.ExhaustingWrites != 1 || f.WritesRefused != 1 || f.RefusedKnown != 2 || f.Writes != 8 {
		t.Errorf("figures: %+v", f)
	}
	var b bytes.Buffer
	WriteReport(&b, Summary{Title: "t"}, []*Figures{f})
	// The table's cells are padded: compare without the padding.
	table := regexp.MustCompile(` +\|`).ReplaceAllString(b.String(), " |")
	for _, want := range []string{"| violations: honest-refused | 0 |", "| hostile mallory flood: admitted / refused / hung up / failed | 5 / 2 / 0 / 0 |",
		"| table writes per refused request | 0.500 (1 writes, 2 refusals) |"} {
		if !strings.Contains(table, want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
}

// TestCheckFails: each planted fault is the violation of its check.
func TestCheckFails(t *testing.T) {
	for _, c := range []struct {
		name  string
		exact bool
		plant func(r *rig)
		check string
	}{
		{"an honest call refused", true, func(r *rig) {
			r.do(r.h, "search", "tools/call", 3*time.Second, "rate_limited", "ratelimit: over the limit for this window")
		}, CheckHonest},
		{"an honest task that failed", true, func(r *rig) {
			r.task(r.h, time.Second, 2*time.Second)
			r.in.Tasks[r.h][0].Status = "failed"
		}, CheckHonest},
		{"a refusal that took a slot", true, func(r *rig) {
			e := r.do(r.x, "tasks", "tools/call", 21*time.Second, "rate_limited", "tasks: the caller holds its quota of live tasks (2)")
			r.write(e, "PutItem", "slots#tasks#x", -1, 200)
		}, CheckRefusalWrote},
		{"two writes that found the window used up on one instance", true, func(r *rig) {
			e := r.do(r.x, "flood", "tools/call", 800*time.Millisecond, "rate_limited", "ratelimit: over the limit for this window")
			r.write(e, "UpdateItem", "rate#x#1", 6, 200)
		}, CheckRefusalWrote},
		{"writes that found the window used up past the calls in flight", false, func(r *rig) {
			for i := range 3 {
				e := r.do(r.x, "flood", "tools/call", time.Duration(800+100*i)*time.Millisecond, "rate_limited", "ratelimit: over the limit for this window")
				r.write(e, "UpdateItem", "rate#"+rateDigest(r.x.QuotaKey)+"#1", int64(6+i), 200)
			}
		}, CheckRefusalWrote},
		{"two writes that found the window used up, the second by a call sent before the first was answered", false, func(r *rig) {
			a := r.do(r.x, "flood", "tools/call", 800*time.Millisecond, "rate_limited", "ratelimit: over the limit for this window")
			b := r.do(r.x, "flood", "tools/call", 805*time.Millisecond, "rate_limited", "ratelimit: over the limit for this window")
			key := "rate#" + rateDigest(r.x.QuotaKey) + "#1"
			r.in.Ops = append(r.in.Ops, Op{Listener: "i0", Name: "UpdateItem", Keys: []string{key}, Count: 6, Status: 200, At: a.Sent.Add(time.Millisecond)},
				Op{Listener: "i0", Name: "UpdateItem", Keys: []string{key}, Count: 7, Status: 200, At: a.Done.Add(time.Millisecond)})
			_ = b // sent before a was answered: it may have read the table before a's refusal was remembered
		}, ""},
		{"a breaker opened", true, func(r *rig) {
			for i := range 3 {
				r.do(r.x, "hang-up", "tools/call", time.Duration(21+i)*time.Second, "", "")
				r.in.Lines[len(r.in.Lines)-1].Tool, r.in.Lines[len(r.in.Lines)-1].Outcome = "notes_search", "dependency_failure"
			}
			r.do(r.h, "search", "tools/call", 6*time.Second, "circuit_open", "breaker: the circuit is open")
			r.in.Lines[len(r.in.Lines)-1].Tool = "notes_search"
		}, CheckBreaker},
		{"a live task over the quota", true, func(r *rig) {
			r.task(r.x, 2*time.Second, 3*time.Second)
		}, CheckOverQuota},
		{"a call over the quota in a window", true, func(r *rig) {
			r.do(r.x, "flood", "tools/call", 900*time.Millisecond, "", "")
		}, CheckOverQuota},
		{"a hostile request logged as a fault", true, func(r *rig) {
			r.do(r.x, "tasks", "tools/call", 21*time.Second, "dependency_failure", "ratelimit: taking a slot lost 8 races in a row")
			r.in.Lines[len(r.in.Lines)-1].Level, r.in.Lines[len(r.in.Lines)-1].Fault = "ERROR", true
		}, CheckHostileFault},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.exact)
			r.clean()
			c.plant(r)
			got := r.check()
			if c.check != "" && len(got[c.check]) == 0 {
				t.Errorf("no %s violation; got %v", c.check, got)
			}
			for k, vs := range got {
				if k != c.check && !(c.check == CheckBreaker && k == CheckHonest) {
					t.Errorf("an unplanned %s violation: %+v", k, vs)
				}
			}
		})
	}
}

// TestOpenings: an opening is the first circuit_open of a tool on an
// instance after a call it let through, with the calls before it as its
// causes; the refusals that follow it are the same opening.
func TestOpenings(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	line := func(src, outcome, trace string, s int) Line {
		return Line{Source: src, Tool: "notes_search", Outcome: outcome, Trace: trace, Time: at.Add(time.Duration(s) * time.Second)}
	}
	lines := []Line{
		line("i0.log", "dependency_failure", "a", 1), line("i0.log", "dependency_failure", "a", 2), line("i0.log", "ok", "b", 3),
		line("i0.log", "timeout", "a", 4), line("i0.log", "circuit_open", "b", 5), line("i0.log", "circuit_open", "b", 6),
		line("i1.log", "circuit_open", "b", 7), line("i0.log", "ok", "b", 40), line("i0.log", "circuit_open", "b", 41),
	}
	got := openings(lines, map[string]string{"a": "mallory", "b": "h1"})
	if len(got) != 3 || got[0].Source != "i0.log" || strings.Join(got[0].Causes, ",") != "mallory dependency_failure,h1 ok,mallory timeout" ||
		got[1].Source != "i0.log" || !got[1].At.Equal(at.Add(41*time.Second)) || got[2].Source != "i1.log" || len(got[2].Causes) != 0 {
		t.Errorf("openings: %+v", got)
	}
}

// TestParseLine: a request line is read from the function's output, with
// or without the emulator's prefix; other lines are not.
func TestParseLine(t *testing.T) {
	raw := `{"time":"2026-12-03T13:41:24.336696859Z","level":"ERROR","msg":"request","gateway_request_id":"abuse-0000007","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","Method":"tools/call","Outcome":"dependency_failure","Tool":"notes_export","fault":true,"cause":"x"}`
	for _, s := range []string{raw, "START RequestId: 1 " + raw} {
		l, ok := parseLine(s)
		if !ok || l.Trace != "0af7651916cd43dd8448eb211c80319c" || l.GatewayID != "abuse-0000007" || !l.Faulty() || l.Tool != "notes_export" ||
			l.Outcome != "dependency_failure" || l.Time.Second() != 24 {
			t.Errorf("%q: %+v, %v", s, l, ok)
		}
	}
	for _, s := range []string{`{"level":"INFO","msg":"shutting down"}`, "END RequestId: 1", `{"msg":"metrics","Method":"x"}`} {
		if _, ok := parseLine(s); ok {
			t.Errorf("%q read as a request line", s)
		}
	}
}

// TestBudget: an honest actor takes at most half its calls quota in a
// window.
func TestBudget(t *testing.T) {
	b := &budget{q: Quotas{Calls: 40, Window: time.Hour}}
	for range 20 {
		b.take(t.Context())
	}
	if b.used != 20 {
		t.Fatalf("used %d", b.used)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	b.take(ctx)
	if ctx.Err() == nil || b.used != 20 {
		t.Errorf("a 21st call of 40 in a window was not held back to the window's end (used %d)", b.used)
	}
}
