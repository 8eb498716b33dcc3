package abuse

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Quotas are a target's MCP_QUOTAS.
type Quotas struct {
	// Calls per Window (tools/call, prompts/get, resources/read).
	Calls  int64
	Window time.Duration
	// Tasks is the live tasks one caller may hold.
	Tasks int
}

// Setting is the MCP_QUOTAS value; the streams quota keeps its default.
func (q Quotas) Setting() string {
	return fmt.Sprintf("calls=%d/%s,tasks=%d", q.Calls, shortDuration(q.Window), q.Tasks)
}

func shortDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return strconv.Itoa(int(d/time.Second)) + "s"
}

// Target is one way the run reaches the function: the fleet's front, or
// a local server.
type Target struct {
	Name string
	URL  string
	// Lambda is the fleet's front; otherwise a local server.
	Lambda bool
	// Table says the function keeps its state in DynamoDB (through the
	// proxy); Exact that each DynamoDB request is known by the request or
	// task run that made it (a fleet's instance serves one invocation at
	// a time; a local server many at once).
	Table, Exact bool
	// Listener is the proxy's listener of the target, or the prefix of
	// its listeners ending in '*' (the fleet's "i*").
	Listener string
	Quotas   Quotas
	// Breaker is MCP_CIRCUIT_BREAKER.
	Breaker string
	// Share is the tasks one caller may hold in the memory task store,
	// when the target has one (0: it has a table).
	Share int
	// Logs returns the function's log files.
	Logs   func() []string
	Actors []*Actor
	// Slow is on while the hostile hangs up: the proxy holds its note
	// book's reads back then (Delay.When), so that the hang-up comes
	// while the call waits.
	Slow atomic.Bool

	index int
}

// NewTarget returns a target; its index numbers its trace ids.
func NewTarget(index int, name, url string) *Target {
	return &Target{index: index, Name: name, URL: url}
}

// Honest adds an honest actor.
func (t *Target) Honest(name, principal, addr string) *Actor {
	return newActor(t, name, false, principal, addr)
}

// Hostile adds a hostile actor; forge is the X-Forwarded-For it sends.
func (t *Target) Hostile(name, principal, addr, forge string) *Actor {
	a := newActor(t, name, true, principal, addr)
	a.Forge = forge
	return a
}

// Role is what a hostile actor does.
type Role int

// The hostile roles.
const (
	// Windows: in each calls window, a burst of task starts, hang-ups
	// mid-call, a second wave of task starts once the first has ended,
	// then a flood of calls to the window's end.
	Windows Role = iota + 1
	// Flood: a flood of calls from the first second to the last.
	Flood
	// Fill: big notes, then task after task until the memory store
	// refuses it its share, then a flood.
	Fill
)

// The load's shape. A hostile task runs longer than the time between its
// two waves, so the first wave's tasks still hold their slots when the
// burst's refused starts are made; an honest one is short.
const (
	burst          = 6 // task starts at once, at a window's start
	secondWave     = 3 // task starts 6 s later
	hostileTaskSec = 5
	honestTaskSec  = 1
	hangUps        = 5
	// hangUpAfter is when the hostile hangs up; the proxy holds its reads
	// back longer (the run's slowRead) while it does.
	hangUpAfter   = 120 * time.Millisecond
	floodWorkers  = 2
	floodInterval = 40 * time.Millisecond // per worker: 50 calls a second
	// fillNotes big notes of 4,000 four-byte characters make an export of
	// about 290 KB, under the 384 KB a task record may hold.
	fillNotes = 9
	// fillRefusals in a row end the fill: its share is held.
	fillRefusals = 30
)

// TaskRun is a task an actor started, and what became of it.
type TaskRun struct {
	Create *Exchange
	ID     string
	// Status, CreatedAt and UpdatedAt are as tasks/get last told them
	// (UpdatedAt is when a task that ended ended).
	Status               string
	CreatedAt, UpdatedAt time.Time
	Polls                int
}

// Load drives the targets' actors.
type Load struct {
	Rec      *Recorder
	Targets  []*Target
	Duration time.Duration
	Seed     uint64
	// Roles are the hostile actors' roles.
	Roles map[*Actor]Role

	mu    sync.Mutex
	tasks map[*Actor][]*TaskRun
	end   time.Time
}

// Run drives every actor until Duration has passed, and the honest ones
// on until their tasks have ended.
func (l *Load) Run(ctx context.Context) {
	l.tasks = map[*Actor][]*TaskRun{}
	l.end = time.Now().Add(l.Duration)
	var wg sync.WaitGroup
	for _, t := range l.Targets {
		for i, a := range t.Actors {
			rng := rand.New(rand.NewPCG(l.Seed, uint64(t.index<<8|i)))
			wg.Go(func() {
				if !a.Hostile {
					l.honest(ctx, a, rng)
					return
				}
				switch l.Roles[a] {
				case Windows:
					l.windows(ctx, a)
				case Flood:
					l.flood(ctx, a, l.end)
				case Fill:
					l.fill(ctx, a)
				}
			})
		}
	}
	wg.Wait()
}

// Tasks are the tasks each actor started.
func (l *Load) Tasks() map[*Actor][]*TaskRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[*Actor][]*TaskRun{}
	for a, ts := range l.tasks {
		out[a] = append([]*TaskRun(nil), ts...)
	}
	return out
}

func (l *Load) started(a *Actor, e *Exchange) *TaskRun {
	id := e.TaskID()
	if id == "" {
		return nil
	}
	tr := &TaskRun{Create: e, ID: id}
	tr.note(e.Result)
	l.mu.Lock()
	l.tasks[a] = append(l.tasks[a], tr)
	l.mu.Unlock()
	return tr
}

// note takes a task's status and times from an answer that describes
// it (a create's or tasks/get's).
func (tr *TaskRun) note(r map[string]any) {
	if s, ok := r["status"].(string); ok {
		tr.Status = s
	}
	for k, to := range map[string]*time.Time{"createdAt": &tr.CreatedAt, "lastUpdatedAt": &tr.UpdatedAt} {
		if v, ok := r[k].(string); ok {
			if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
				*to = t
			}
		}
	}
}

// Ended reports whether the task's last known status is terminal.
func (tr *TaskRun) Ended() bool {
	switch tr.Status {
	case "completed", "failed", "cancelled":
		return true
	}
	return false
}

// budget paces an honest actor: at most half its calls quota in each
// window, so that a refusal of its calls can only be for another's
// behaviour.
type budget struct {
	q     Quotas
	start time.Time
	used  int64
}

func (b *budget) take(ctx context.Context) {
	if b.q.Calls == 0 {
		return
	}
	for {
		now := time.Now()
		if ws := now.Truncate(b.q.Window); !ws.Equal(b.start) {
			b.start, b.used = ws, 0
		}
		if b.used < b.q.Calls/2 {
			b.used++
			return
		}
		// Past the window's end by a margin: clocks are one here, but a
		// call sent at the edge is counted when it arrives.
		sleepUntil(ctx, b.start.Add(b.q.Window).Add(100*time.Millisecond))
		if ctx.Err() != nil {
			return
		}
	}
}

func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}

func tool(name string, args map[string]any) Call {
	return Call{Method: "tools/call", Name: name, Params: map[string]any{"name": name, "arguments": args}}
}

// honest is a well-behaved client: every half second to second a
// search of its own notes, an add with an idempotency key, a tools/list
// or a short export polled to its end; a quarter of them through the
// fleet's streaming door.
func (l *Load) honest(ctx context.Context, a *Actor, rng *rand.Rand) {
	t := a.target
	b := &budget{q: t.Quotas}
	marker := fmt.Sprintf("%s-%x", a.Name, l.Rec.run)
	n := 0
	for time.Now().Before(l.end) && ctx.Err() == nil {
		sleepUntil(ctx, time.Now().Add(500*time.Millisecond+time.Duration(rng.IntN(600))*time.Millisecond))
		if !time.Now().Before(l.end) {
			return
		}
		stream := t.Lambda && rng.IntN(4) == 0
		switch p := rng.IntN(100); {
		case p < 40:
			b.take(ctx)
			c := tool("notes_search", map[string]any{"query": marker})
			c.Stream = stream
			l.Rec.Do(ctx, a, "search", c)
		case p < 60:
			b.take(ctx)
			n++
			c := tool("notes_add", map[string]any{"text": fmt.Sprintf("%s note %d", marker, n)})
			c.Params["idempotencyKey"] = fmt.Sprintf("%s-%d", marker, n)
			c.Stream = stream
			l.Rec.Do(ctx, a, "add", c)
		case p < 80:
			l.Rec.Do(ctx, a, "list", Call{Method: "tools/list", Stream: stream})
		default:
			b.take(ctx)
			c := tool("notes_export", map[string]any{"seconds": honestTaskSec})
			c.Tasks, c.Stream = true, stream
			if tr := l.started(a, l.Rec.Do(ctx, a, "export", c)); tr != nil {
				l.poll(ctx, a, tr, "poll", -1, 60*time.Second)
			}
		}
	}
}

// poll asks tasks/get about tr as its answers ask (pollIntervalMs),
// first after first (negative: the poll interval), until it ends or
// limit passes.
func (l *Load) poll(ctx context.Context, a *Actor, tr *TaskRun, behaviour string, first, limit time.Duration) {
	giveUp := time.Now().Add(limit)
	wait := time.Second
	if ms, ok := tr.Create.Result["pollIntervalMs"].(float64); ok && ms > 0 {
		wait = time.Duration(ms) * time.Millisecond
	}
	if first < 0 {
		first = wait
	}
	for next := first; !tr.Ended() && time.Now().Before(giveUp) && ctx.Err() == nil; next = wait {
		sleepUntil(ctx, time.Now().Add(next))
		e := l.Rec.Do(ctx, a, behaviour, Call{Method: "tasks/get", Name: tr.ID, Params: map[string]any{"taskId": tr.ID}, Tasks: true})
		tr.Polls++
		if e.Class() == OK {
			tr.note(e.Result)
		}
	}
}

// Settle asks tasks/get, as their callers, about every task not known
// to have ended, until each has or limit passes: the hostile's tasks'
// times come from there.
func (l *Load) Settle(ctx context.Context, limit time.Duration) {
	var wg sync.WaitGroup
	free := make(chan struct{}, 8)
	for a, ts := range l.Tasks() {
		for _, tr := range ts {
			if tr.Ended() {
				continue
			}
			free <- struct{}{}
			wg.Go(func() {
				defer func() { <-free }()
				l.poll(ctx, a, tr, "settle", 0, limit)
			})
		}
	}
	wg.Wait()
}

// windows is the hostile's calls windows, each: a burst of task starts,
// hang-ups mid-call while the table is slow, a second wave of task
// starts once the first wave has ended, then a flood to the window's
// end. A first window too short for that is flooded only.
func (l *Load) windows(ctx context.Context, a *Actor) {
	t := a.target
	w := t.Quotas.Window
	for ctx.Err() == nil {
		now := time.Now()
		if !now.Before(l.end) {
			return
		}
		we := now.Truncate(w).Add(w)
		stop := we
		if l.end.Before(stop) {
			stop = l.end
		}
		if stop.Sub(now) < 10*time.Second {
			l.flood(ctx, a, stop)
			continue
		}
		l.startTasks(ctx, a, burst)
		sleepUntil(ctx, now.Add(time.Second))
		t.Slow.Store(true)
		for range hangUps {
			c := tool("notes_search", map[string]any{"query": "hang-up"})
			c.HangUp = hangUpAfter
			l.Rec.Do(ctx, a, "hang-up", c)
			sleepUntil(ctx, time.Now().Add(200*time.Millisecond))
		}
		t.Slow.Store(false)
		sleepUntil(ctx, now.Add(6*time.Second))
		l.startTasks(ctx, a, secondWave)
		sleepUntil(ctx, now.Add(8*time.Second))
		l.flood(ctx, a, stop)
	}
}

// startTasks starts n exports at once, not waiting for them.
func (l *Load) startTasks(ctx context.Context, a *Actor, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			c := tool("notes_export", map[string]any{"seconds": hostileTaskSec})
			c.Tasks = true
			l.started(a, l.Rec.Do(ctx, a, "tasks", c))
		})
	}
	wg.Wait()
}

// flood sends calls from floodWorkers workers, each at most one every
// floodInterval, until stop.
func (l *Load) flood(ctx context.Context, a *Actor, stop time.Time) {
	var wg sync.WaitGroup
	for range floodWorkers {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(stop) {
				next := time.Now().Add(floodInterval)
				l.Rec.Do(ctx, a, "flood", tool("notes_search", map[string]any{"query": "flood"}))
				sleepUntil(ctx, next)
			}
		})
	}
	wg.Wait()
}

// fill fills the hostile's share of the memory task store: big notes,
// then exports of them (each about 290 KB, held until it expires) from
// three workers at once until its starts are refused fillRefusals times
// in a row; then a flood to the end.
func (l *Load) fill(ctx context.Context, a *Actor) {
	text := strings.Repeat("\U0001D11E", 4000)
	for i := range fillNotes {
		c := tool("notes_add", map[string]any{"text": text})
		c.Params["idempotencyKey"] = fmt.Sprintf("fill-%x-%d", l.Rec.run, i)
		l.Rec.Do(ctx, a, "fill", c)
	}
	var inARow atomic.Int32
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(l.end) && inARow.Load() < fillRefusals {
				c := tool("notes_export", map[string]any{"seconds": 0})
				c.Tasks = true
				e := l.Rec.Do(ctx, a, "fill", c)
				if l.started(a, e) != nil {
					inARow.Store(0)
					continue
				}
				inARow.Add(1)
				sleepUntil(ctx, time.Now().Add(20*time.Millisecond))
			}
		})
	}
	wg.Wait()
	l.flood(ctx, a, l.end)
}
