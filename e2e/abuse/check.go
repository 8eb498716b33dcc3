package abuse

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/serverless-mcp/mcp-lambda/e2e/internal/harness"
)

// The checks: each counts violations, and the run fails unless every
// count is 0.
const (
	// CheckHonest: an honest request refused or failed, or an honest
	// task that did not complete. Honest callers stay under half their
	// quotas, so a refusal of theirs is for another's behaviour.
	CheckHonest = "honest-refused"
	// CheckRefusalWrote: a refused request that wrote to the table,
	// beyond the calls counter's increment (the one that charged a call
	// the calls quota admitted, or the one that found the window used up,
	// at most once per principal, window and instance).
	CheckRefusalWrote = "refusal-wrote"
	// CheckBreaker: a circuit breaker opened. The run breaks no
	// dependency, so an opening is a caller's doing.
	CheckBreaker = "breaker-opened"
	// CheckOverQuota: the hostile held more live tasks at once than its
	// quota, more tasks than its share of the memory store, or had more
	// calls admitted in a window than the calls quota.
	CheckOverQuota = "hostile-over-quota"
	// CheckHostileFault: a hostile request logged as a fault of the
	// server's: a caller's behaviour that would page an operator.
	CheckHostileFault = "hostile-fault"
)

// Checks are the checks in report order.
var Checks = []string{CheckHonest, CheckRefusalWrote, CheckBreaker, CheckOverQuota, CheckHostileFault}

// Violation is one broken promise.
type Violation struct {
	Target, Check, Subject, Detail string
	// Lines are the function's log lines of the exchanges involved.
	Lines []string
}

// Refusal causes, read from the request line's cause.
const (
	CauseCalls  = "calls quota"
	CauseTasks  = "live tasks"
	CauseShare  = "memory share"
	CauseStream = "open streams"
)

// causeOf names why a refused request was refused, from its log line.
func causeOf(l *Line) string {
	switch {
	case l == nil:
		return "no log line"
	case strings.Contains(l.Cause, "over the limit for this window"):
		return CauseCalls
	case strings.Contains(l.Cause, "live tasks"):
		return CauseTasks
	case strings.Contains(l.Cause, "share of the memory store"):
		return CauseShare
	case strings.Contains(l.Cause, "open streams"):
		return CauseStream
	}
	return l.Outcome
}

// Tally counts one behaviour's requests by how they ended.
type Tally struct{ Admitted, Refused, HungUp, Failed int }

// Opening is a circuit breaker's opening, as the request lines show it:
// the first circuit_open refusal of a tool on an instance after a call
// it let through.
type Opening struct {
	Source, Tool string
	At           time.Time
	// Causes are the tool's calls on that instance just before it: who
	// made each and how it ended.
	Causes []string
}

// Figures are what one target's run showed.
type Figures struct {
	Target *Target
	// The honest actors' requests and their counted calls, served, and
	// their latencies.
	HonestRequests, HonestServed, HonestCalls, HonestCallsServed int
	HonestP50, HonestP99, HonestCallP99                          time.Duration
	HonestTasks, HonestTasksCompleted                            int
	// Hostile counts the hostile actors' requests by actor and behaviour
	// ("mallory flood"); RefusedBy their refusals by cause.
	Hostile   map[string]*Tally
	RefusedBy map[string]int
	// MostInWindow is, per hostile actor, the most counted calls the
	// calls quota admitted in one window.
	MostInWindow map[string]int64
	// Table writes (applied): in all; by admitted requests (answered or
	// hung up); by refused ones; by task runs; by instances as they start
	// (the catalog's record, stateless.Server.AnnounceCatalog, made beside
	// whichever request came first); by no request the proxy could name.
	// Rejected are the write requests DynamoDB rejected on
	// their condition, RejectedRefused those of refused requests.
	Writes, WritesAdmitted, WritesRefused, WritesTasks, WritesStart, WritesUnknown int
	Rejected, RejectedRefused                                                      int
	// RefusedKnown are the refused requests whose writes are known
	// (Target.Exact). Of their writes: the calls counter's increments
	// that charged a call the calls quota admitted (then refused by
	// another quota), those that found the window used up, and any
	// other.
	RefusedKnown, ChargeWrites, ExhaustingWrites, OtherRefusalWrites int
	// ExhaustingGroups are the principal, window and instance groups the
	// exhausting writes fall in (each may hold one).
	ExhaustingGroups int
	// LiveMost is, per hostile actor, the most live tasks it held at once
	// (by the tasks' own times); HostileTasks the tasks it started.
	LiveMost     map[string]int
	HostileTasks map[string]int
	Openings     []Opening
	// FaultLines by whose request it was: hostile, honest, other (a
	// task's run, a line no request of the run's sent).
	FaultLines  map[string]int
	HungUpLines map[string]int // the hang-ups' log outcomes
	Violations  []Violation
	// Thin says what the run did too little of to show anything.
	Thin []string
}

// Input is what Check reads for one target.
type Input struct {
	Target    *Target
	Exchanges []*Exchange
	Lines     []Line
	// Ops are the DynamoDB requests through the target's listeners.
	Ops   []Op
	Tasks map[*Actor][]*TaskRun
	Roles map[*Actor]Role
	// Settled is when the tasks' states were last read: a task still
	// live then is counted live until then.
	Settled time.Time
}

// Check computes a target's figures and violations.
func Check(in Input) *Figures {
	t := in.Target
	f := &Figures{Target: t, Hostile: map[string]*Tally{}, RefusedBy: map[string]int{}, MostInWindow: map[string]int64{},
		LiveMost: map[string]int{}, HostileTasks: map[string]int{}, FaultLines: map[string]int{}, HungUpLines: map[string]int{}}
	byTrace := map[string]*Line{}
	for i := range in.Lines {
		if l := &in.Lines[i]; l.Trace != "" {
			byTrace[l.Trace] = l
		}
	}
	lineOf := func(e *Exchange) *Line { return byTrace[e.Trace] }
	linesOf := func(es ...*Exchange) []string {
		var out []string
		for _, e := range es {
			if l := lineOf(e); l != nil {
				out = append(out, l.Source+": "+l.Raw)
			} else {
				out = append(out, "(no log line for trace "+e.Trace+")")
			}
		}
		return out
	}
	violate := func(check, subject, detail string, es ...*Exchange) {
		f.Violations = append(f.Violations, Violation{Target: t.Name, Check: check, Subject: subject, Detail: detail, Lines: linesOf(es...)})
	}

	// Honest requests.
	var lat, callLat []time.Duration
	for _, e := range in.Exchanges {
		if e.Actor.Hostile {
			continue
		}
		f.HonestRequests++
		if e.Counted() {
			f.HonestCalls++
		}
		if c := e.Class(); c != OK {
			violate(CheckHonest, e.Actor.Name+" "+e.Behaviour, e.Describe(), e)
			continue
		}
		f.HonestServed++
		lat = append(lat, e.Latency())
		if e.Counted() {
			f.HonestCallsServed++
			callLat = append(callLat, e.Latency())
		}
	}
	for _, d := range [][]time.Duration{lat, callLat} {
		slices.Sort(d)
	}
	f.HonestP50, f.HonestP99, f.HonestCallP99 = harness.Percentile(lat, 0.50), harness.Percentile(lat, 0.99), harness.Percentile(callLat, 0.99)
	for a, ts := range in.Tasks {
		for _, tr := range ts {
			if a.Hostile {
				f.HostileTasks[a.Name]++
				continue
			}
			f.HonestTasks++
			if tr.Status == "completed" {
				f.HonestTasksCompleted++
			} else {
				violate(CheckHonest, a.Name+" task "+tr.ID, fmt.Sprintf("the task ended %q after %d polls", tr.Status, tr.Polls), tr.Create)
			}
		}
	}

	// Hostile requests.
	perWindow := map[string]map[time.Time]int64{}
	for _, e := range in.Exchanges {
		if !e.Actor.Hostile || e.Behaviour == "settle" {
			continue
		}
		tl := f.Hostile[e.Actor.Name+" "+e.Behaviour]
		if tl == nil {
			tl = &Tally{}
			f.Hostile[e.Actor.Name+" "+e.Behaviour] = tl
		}
		l := lineOf(e)
		switch e.Class() {
		case OK, ToolError:
			tl.Admitted++
		case Refused:
			tl.Refused++
			f.RefusedBy[causeOf(l)]++
		case HungUp:
			tl.HungUp++
			if l != nil {
				f.HungUpLines[l.Outcome]++
			} else {
				f.HungUpLines["no log line"]++
			}
		default:
			tl.Failed++
		}
		if l != nil && l.Faulty() {
			violate(CheckHostileFault, e.Actor.Name+" "+e.Behaviour, e.Describe(), e)
		}
		if !e.Counted() || t.Quotas.Calls == 0 {
			continue
		}
		// Admitted by the calls quota: answered, or refused by another
		// quota, or hung up after the quota let it through.
		admitted := e.Class() == OK || e.Class() == ToolError
		if l != nil {
			admitted = causeOf(l) != CauseCalls
		}
		w := t.Quotas.Window
		if admitted && e.Sent.Truncate(w).Equal(e.Done.Truncate(w)) {
			m := perWindow[e.Actor.Name]
			if m == nil {
				m = map[time.Time]int64{}
				perWindow[e.Actor.Name] = m
			}
			m[e.Sent.Truncate(w)]++
		}
	}
	for name, m := range perWindow {
		for ws, n := range m {
			f.MostInWindow[name] = max(f.MostInWindow[name], n)
			if n > t.Quotas.Calls {
				violate(CheckOverQuota, name+" calls", fmt.Sprintf("%d calls admitted in the window from %s, over the quota of %d", n, ws.Format(time.TimeOnly), t.Quotas.Calls))
			}
		}
	}

	// Table writes.
	if t.Table {
		checkWrites(in, f, lineOf, violate)
	}

	// The hostile's live tasks, and its share of the memory store.
	for a, ts := range in.Tasks {
		if !a.Hostile {
			continue
		}
		most, at := mostLive(ts, in.Settled)
		f.LiveMost[a.Name] = most
		if most > t.Quotas.Tasks {
			violate(CheckOverQuota, a.Name+" live tasks", fmt.Sprintf("%d tasks live at once at %s, over the quota of %d", most, at.Format("15:04:05.000"), t.Quotas.Tasks))
		}
		if t.Share > 0 && len(ts) > t.Share {
			violate(CheckOverQuota, a.Name+" memory share", fmt.Sprintf("%d tasks held, over its share of %d", len(ts), t.Share))
		}
	}

	// Breaker openings, fault lines.
	nameOf := map[string]string{}
	for _, e := range in.Exchanges {
		nameOf[e.Trace] = e.Actor.Name
	}
	f.Openings = openings(in.Lines, nameOf)
	for _, o := range f.Openings {
		f.Violations = append(f.Violations, Violation{Target: t.Name, Check: CheckBreaker, Subject: o.Source + " " + o.Tool,
			Detail: fmt.Sprintf("opened at %s after: %s", o.At.Format("15:04:05.000"), strings.Join(o.Causes, ", "))})
	}
	roleOf := map[string]string{}
	for _, e := range in.Exchanges {
		roleOf[e.Trace] = e.Actor.Role()
	}
	for _, l := range in.Lines {
		if !l.Faulty() {
			continue
		}
		r := roleOf[l.Trace]
		if r == "" {
			r = "other"
		}
		f.FaultLines[r]++
	}
	slices.SortStableFunc(f.Violations, func(a, b Violation) int {
		return cmp.Compare(slices.Index(Checks, a.Check), slices.Index(Checks, b.Check))
	})

	// What the run must have done to show anything.
	if f.HonestCallsServed == 0 {
		f.Thin = append(f.Thin, "no honest call was served")
	}
	for a, role := range in.Roles {
		if a.target != t {
			continue
		}
		if fl := f.Hostile[a.Name+" flood"]; fl == nil || fl.Refused == 0 {
			f.Thin = append(f.Thin, a.Name+"'s flood was never refused")
		}
		switch role {
		case Windows:
			if f.RefusedBy[CauseTasks] == 0 {
				f.Thin = append(f.Thin, a.Name+"'s task starts were never refused for its live tasks")
			}
			if h := f.Hostile[a.Name+" hang-up"]; h == nil || h.HungUp == 0 {
				f.Thin = append(f.Thin, a.Name+" never hung up mid-call")
			} else if !t.Lambda && f.HungUpLines["ok"] == h.HungUp {
				f.Thin = append(f.Thin, a.Name+"'s hang-ups all came after their calls had ended")
			}
		case Fill:
			if f.RefusedBy[CauseShare] == 0 {
				f.Thin = append(f.Thin, a.Name+" never reached its share of the memory store")
			}
		}
	}
	slices.Sort(f.Thin)
	return f
}

// catalogPrefix begins the partition key of the catalog's item, which
// an instance writes as it starts, for no request (package events).
const catalogPrefix = "catalog#"

// checkWrites attributes the target's table writes and checks those of
// refused requests. A write is one DynamoDB applied; one it rejected on
// its condition (a slot another request took first) changed nothing,
// though DynamoDB bills it as a write, and is counted apart.
func checkWrites(in Input, f *Figures, lineOf func(*Exchange) *Line, violate func(check, subject, detail string, es ...*Exchange)) {
	t := in.Target
	byTag := map[string][]Op{}
	type group struct{ key, listener string }
	exhausting := map[group][]Op{}
	for _, op := range in.Ops {
		if !op.Write() {
			continue
		}
		if !op.Applied() {
			f.Rejected++
		} else {
			f.Writes++
			if op.Count > t.Quotas.Calls {
				f.ExhaustingWrites++
				g := group{op.Keys[0], op.Listener}
				exhausting[g] = append(exhausting[g], op)
			}
		}
		switch {
		case len(op.Keys) > 0 && strings.HasPrefix(op.Keys[0], catalogPrefix):
			if op.Applied() {
				f.WritesStart++
			}
		case !t.Exact || op.Tag == "":
			if op.Applied() {
				f.WritesUnknown++
			}
		case strings.HasPrefix(op.Tag, workerTag):
			if op.Applied() {
				f.WritesTasks++
			}
		default:
			byTag[op.Tag] = append(byTag[op.Tag], op)
		}
	}
	// At most one write finds a principal's window used up on an
	// instance: the instance remembers it. An instance that serves calls
	// at once (a local server) may have several of the principal's calls
	// past the counter before the first refusal is remembered: one each.
	f.ExhaustingGroups = len(exhausting)
	owner := map[string]*Actor{}
	for _, a := range t.Actors {
		owner[rateDigest(a.QuotaKey)] = a
	}
	for g, ops := range exhausting {
		allowed, why := 1, "one instance remembers a window used up"
		if !t.Exact {
			a := owner[strings.Split(g.key, "#")[1]]
			allowed = max(1, inFlight(in.Exchanges, a, ops))
			why = fmt.Sprintf("at most one per call of the principal's sent before the window was remembered (%d)", allowed)
		}
		if len(ops) > allowed {
			violate(CheckRefusalWrote, g.key+" on "+g.listener, fmt.Sprintf("%d writes found the window used up; %s", len(ops), why))
		}
	}
	if !t.Exact {
		return
	}
	for _, e := range in.Exchanges {
		id := e.RequestID
		if l := lineOf(e); id == "" && l != nil {
			// A caller that hung up never saw the front's id; the
			// function's line has it.
			id = l.GatewayID
		}
		if id == "" {
			continue
		}
		ops := byTag[id]
		delete(byTag, id)
		refused := e.Class() == Refused
		if refused {
			f.RefusedKnown++
		}
		var other []string
		for _, op := range ops {
			switch {
			case !op.Applied():
				if refused {
					f.RejectedRefused++
				}
			case !refused:
				f.WritesAdmitted++
			default:
				f.WritesRefused++
				switch {
				case op.Count > t.Quotas.Calls:
				case op.Count >= 0:
					f.ChargeWrites++
				default:
					f.OtherRefusalWrites++
					other = append(other, op.Name+" "+strings.Join(op.Kinds(), "+"))
				}
			}
		}
		if len(other) > 0 {
			violate(CheckRefusalWrote, e.Actor.Name+" "+e.Behaviour, fmt.Sprintf("a refusal wrote %s: %s", strings.Join(other, ", "), e.Describe()), e)
		}
	}
	// Tags no exchange of the run carried.
	for _, ops := range byTag {
		for _, op := range ops {
			if op.Applied() {
				f.WritesUnknown++
			}
		}
	}
}

// inFlight bounds how many of a's counted calls could each have made one
// of ops (writes that found a's window used up on one instance): the
// instance remembers the window from the first such write's answer, so
// a call that found it used up in the table was sent before the call
// that made the first one was answered. That call was in flight at the
// first write; the latest of their answers (until) bounds when the
// window was remembered, and every call sent by then and not answered
// before the first write may have made one. A call whose caller hung up
// may still be running in the instance after its caller saw it end: its
// end is unknown, so it counts as running on.
func inFlight(es []*Exchange, a *Actor, ops []Op) int {
	if len(ops) == 0 {
		return 0
	}
	first := ops[0].At
	for _, op := range ops[1:] {
		if op.At.Before(first) {
			first = op.At
		}
	}
	running := func(e *Exchange, sentBy time.Time) bool {
		return e.Actor == a && e.Counted() && !e.Sent.After(sentBy) && (e.Abandoned || !e.Done.Before(first))
	}
	open := func(e *Exchange) bool { return running(e, first) }
	until := first
	for _, e := range es {
		switch {
		case !open(e):
		case e.Abandoned:
			// Its count may have been answered to a cancelled call,
			// which remembers nothing.
			until = time.Unix(1<<40, 0)
		case e.Done.After(until):
			until = e.Done
		}
	}
	n := 0
	for _, e := range es {
		if running(e, until) {
			n++
		}
	}
	return n
}

// rateDigest is the digest a calls counter's key names a quota key by
// (ratelimit.Key: 128 bits of its SHA-256, hex).
func rateDigest(quotaKey string) string {
	sum := sha256.Sum256([]byte(quotaKey))
	return hex.EncodeToString(sum[:16])
}

// mostLive is the most tasks of ts live at once, and when. A task is
// counted live from its create's answer, when it was stored for sure,
// to the time it ended (or settled, if it had not): inside its true
// life, so that a count over the quota is no artefact of timing.
func mostLive(ts []*TaskRun, settled time.Time) (int, time.Time) {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, tr := range ts {
		start, end := tr.Create.Done, settled
		if tr.Ended() && !tr.UpdatedAt.IsZero() {
			end = tr.UpdatedAt
		}
		if !end.After(start) {
			continue
		}
		edges = append(edges, edge{start, 1}, edge{end, -1})
	}
	// Ends before starts at the same instant.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.delta, b.delta)
	})
	live, most, at := 0, 0, time.Time{}
	for _, e := range edges {
		live += e.delta
		if live > most {
			most, at = live, e.at
		}
	}
	return most, at
}

// openings finds the breakers' openings in request lines: per log file
// and tool, a circuit_open refusal after a call that was let through.
// who names the actor of a trace id.
func openings(lines []Line, who map[string]string) []Opening {
	bySource := map[string][]Line{}
	for _, l := range lines {
		if l.Tool != "" {
			bySource[l.Source] = append(bySource[l.Source], l)
		}
	}
	var out []Opening
	for _, src := range slices.Sorted(maps.Keys(bySource)) {
		ls := bySource[src]
		slices.SortStableFunc(ls, func(a, b Line) int { return a.Time.Compare(b.Time) })
		prev := map[string][]Line{}
		for _, l := range ls {
			before := prev[l.Tool]
			if l.Outcome == "circuit_open" && (len(before) == 0 || before[len(before)-1].Outcome != "circuit_open") {
				o := Opening{Source: src, Tool: l.Tool, At: l.Time}
				for _, c := range before[max(0, len(before)-3):] {
					name := who[c.Trace]
					if name == "" {
						name = "?"
					}
					o.Causes = append(o.Causes, name+" "+c.Outcome)
				}
				out = append(out, o)
			}
			prev[l.Tool] = append(before, l)
		}
	}
	return out
}
