package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// LoadOptions configure the load generator.
type LoadOptions struct {
	// Workers is the fixed concurrency.
	Workers int
	// Duration is how long workers start new operations; the operations
	// in flight then run to their end (Settle).
	Duration time.Duration
	// PursueLimit bounds how long one logical request is retried.
	PursueLimit time.Duration
	// Recovery bounds the run: no request is retried later than
	// Recovery after Duration, so the run ends in Duration + Recovery
	// (plus one request's time) whatever the function does.
	Recovery time.Duration
	// Watchers are the principals that hold listen streams open while
	// their notes are deleted (listen.go), beside the workers.
	Watchers int
	// RunID prefixes the run's keys and principals.
	RunID string
	Seed  uint64
}

// Attempt is one HTTP exchange of a logical request.
type Attempt struct {
	At        time.Duration // since the load started
	Class     Class
	RequestID string
	Instance  string
	Stream    bool // through the streaming door
	Detail    string
}

// History is the attempts of one logical request and how it ended.
type History struct {
	What     string // what was sent, for reports
	Attempts []Attempt
	// Final is the definitive answer, nil when the request was given up.
	Final *Answer
	// SawRetryable: some attempt was answered retryable (or not at all).
	SawRetryable bool
}

// Ended reports whether the request got a definitive answer.
func (h *History) Ended() bool { return h.Final != nil }

// KeyRecord is one idempotency key of notes_add: every logical request
// that carried it and what they were answered.
type KeyRecord struct {
	Key, Marker, Principal string
	// Kind is how the key was used: "add", "dup-concurrent" (sent twice
	// at once), "resend" (sent again after its success), "delete-target"
	// (a note the run then deletes).
	Kind string
	mu   sync.Mutex
	Reqs []*History
	// IDs are the note ids of the success answers, in order; Replays
	// how many of them were marked replays.
	IDs     []string
	Replays int
	// Unexpected are definitive answers that are neither a success nor
	// a retryable refusal.
	Unexpected []string
}

// Succeeded reports whether some request with the key was answered with
// a note.
func (k *KeyRecord) Succeeded() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.IDs) > 0
}

// DeleteRecord is one confirmed notes_delete flow: the note, the sealed
// confirmation, and every redemption of it.
type DeleteRecord struct {
	Note   *KeyRecord
	NoteID string
	Key    string // the first redemption's idempotency key
	// Mode is when the second redemption was sent: "concurrent" or
	// "after"; Resend says the first was sent again after its success.
	Mode   string
	Resend bool
	Ask    *History
	// Redemptions: the first (keyed), the second (no key or another
	// key), the resend (the first's key again).
	Redemptions []*Redemption
	Unexpected  []string
}

// Redemption is one logical request carrying the confirmed state.
type Redemption struct {
	Role string // first, second, resend
	Key  string // its idempotency key, "" for none
	Hist *History
	// Outcome: "deleted", "deleted-replay", "not-found",
	// "not-found-replay", "refused" (-32602), "gave-up", or "unexpected".
	Outcome string
}

// Executed reports whether the redemption ran the tool's delete (not a
// replay, not refused).
func (r *Redemption) Executed() bool { return r.Outcome == "deleted" || r.Outcome == "not-found" }

// TaskKey is one idempotency key of notes_export, a task: every create
// that carried it, what they were answered, and the task's end as
// tasks/get told it.
type TaskKey struct {
	Key, Principal string
	// Kind is how the key was used: "task", "task-dup-concurrent" (sent
	// twice at once), "task-resend" (sent again after its answer, as if
	// that was lost, and again after the task ended).
	Kind    string
	Seconds int
	// Title is the title the flow answered the export's question with
	// (tasks/update), when it asked for one (askTitle); Updates are the
	// tasks/update requests.
	Title   string
	mu      sync.Mutex
	Creates []*History
	Updates []*History
	// IDs are the taskIds of the answers, in order.
	IDs        []string
	Unexpected []string
	// Cancel is the tasks/cancel sent, if one was.
	Cancel *History
	// Polls are the tasks/get requests; Status the last status one was
	// answered ("" for none), Final its answer.
	Polls  []*History
	Status string
	Final  *Answer
}

// TaskID is the first taskId a create was answered, or "".
func (k *TaskKey) TaskID() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.IDs) == 0 {
		return ""
	}
	return k.IDs[0]
}

// terminal reports whether a task status is an end.
func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// Load is the load generator and what it recorded.
type Load struct {
	o      LoadOptions
	client *Client
	start  time.Time

	mu       sync.Mutex
	keys     []*KeyRecord
	tasks    []*TaskKey
	deletes  []*DeleteRecord
	watchers []*watcher
	reads    []*History
	readBad  []string
	latency  []time.Duration
	classes  map[Class]int
	gateway  []string      // uninjected gateway errors, described
	streamed map[Class]int // the attempts through the streaming door
	seq      int
	taskSeq  int
	rngSeq   uint64
	opCounts map[string]int
	version  string // the function's, from serverInfo
}

// NewLoad returns a generator against the front's MCP URL.
func NewLoad(url string, o LoadOptions) *Load {
	return &Load{o: o, classes: map[Class]int{}, streamed: map[Class]int{}, opCounts: map[string]int{},
		client: &Client{URL: url, HTTP: &http.Client{
			Timeout:   90 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: 2 * o.Workers},
		}}}
}

// Run runs the workers until Duration has passed and every operation
// they started has ended.
func (l *Load) Run(ctx context.Context) {
	l.start = time.Now()
	var wg sync.WaitGroup
	for w := range l.o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.worker(ctx, w)
		}()
	}
	for n := range l.o.Watchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.watch(ctx, n)
		}()
	}
	wg.Wait()
}

// since is the time since the load started.
func (l *Load) since() time.Duration { return time.Since(l.start) }

func (l *Load) newRand() *rand.Rand {
	l.mu.Lock()
	l.rngSeq++
	s := l.rngSeq
	l.mu.Unlock()
	return rand.New(rand.NewPCG(l.o.Seed, s))
}

func (l *Load) next() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	return l.seq
}

// streamShare is the share of logical requests sent through the
// function's streaming door; the rest go through the buffered one.
const streamShare = 0.25

// worker runs operations back to back: reads, keyed adds (some sent
// twice at once, some sent again after their success), keyed exports
// run as tasks (some created twice at once, some created again, some
// cancelled) polled to their end, and confirmed deletes whose state is
// redeemed a second time.
func (l *Load) worker(ctx context.Context, w int) {
	rng := l.newRand()
	adds := 0
	var mine []*KeyRecord // acknowledged notes of this worker, for searches
	for l.since() < l.o.Duration && ctx.Err() == nil {
		// Each principal stays well under the note book's limit (1,000).
		principal := fmt.Sprintf("%s-w%d-p%d", l.o.RunID, w, adds/400)
		r := rng.Float64()
		if w == 0 {
			// The first worker runs only tasks: they are few and slow
			// beside the other operations, and the run's task faults
			// (a worker killed after its outcome write, a dropped
			// answer) need some to meet, until the load's end.
			r = 0.7
		}
		switch {
		case r < 0.12:
			l.count("tools/list")
			l.read(ctx, rng, Call{Principal: principal, Method: "tools/list"}, "tools/list")
		case r < 0.27:
			l.count("notes_search")
			q := ""
			if len(mine) > 0 && rng.IntN(4) > 0 {
				q = mine[rng.IntN(len(mine))].Marker
			}
			l.read(ctx, rng, Call{Principal: principal, Method: "tools/call", Name: "notes_search",
				Params: map[string]any{"name": "notes_search", "arguments": map[string]any{"query": q}}}, "notes_search "+q)
		case r < 0.62:
			adds++
			kind := "add"
			switch x := rng.Float64(); {
			case x < 0.15:
				kind = "dup-concurrent"
			case x < 0.30:
				kind = "resend"
			}
			l.count("notes_add " + kind)
			if k := l.add(ctx, rng, principal, kind); k.Succeeded() {
				mine = append(mine, k)
				if len(mine) > 64 {
					mine = mine[1:]
				}
			}
		case r < 0.76:
			kind := "task"
			switch x := rng.Float64(); {
			case x < 0.2:
				kind = "task-dup-concurrent"
			case x < 0.4:
				kind = "task-resend"
			}
			l.count("notes_export " + kind)
			l.taskFlow(ctx, rng, principal, kind)
		default:
			adds++
			l.count("notes_delete")
			l.deleteFlow(ctx, rng, principal)
		}
	}
}

// Version is the function's version as its answers name it (make build
// stamps git describe).
func (l *Load) Version() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version
}

func (l *Load) count(op string) {
	l.mu.Lock()
	l.opCounts[op]++
	l.mu.Unlock()
}

// send sends one attempt and records it.
func (l *Load) send(ctx context.Context, c Call, h *History) *Answer {
	a := l.client.Do(ctx, c)
	cl := a.Classify()
	l.mu.Lock()
	l.classes[cl]++
	if a.Status != 0 {
		l.latency = append(l.latency, a.Latency)
	}
	if l.version == "" {
		meta, _ := a.Result["_meta"].(map[string]any)
		info, _ := meta["io.modelcontextprotocol/serverInfo"].(map[string]any)
		l.version, _ = info["version"].(string)
	}
	if c.Stream {
		l.streamed[cl]++
	}
	if cl == Gateway {
		l.gateway = append(l.gateway, fmt.Sprintf("t=%s %s: %s", l.since().Round(time.Millisecond), h.What, a.Describe()))
	}
	detail := a.Describe()
	if c.Stream {
		detail += " door=stream"
	}
	h.Attempts = append(h.Attempts, Attempt{At: l.since(), Class: cl, RequestID: a.RequestID, Instance: a.Instance, Stream: c.Stream, Detail: detail})
	l.mu.Unlock()
	return a
}

// pursue sends c until it gets a definitive answer — anything but a
// retryable refusal, a transport error or a gateway error — waiting as
// the answer asks (else backing off), for at most PursueLimit.
func (l *Load) pursue(ctx context.Context, rng *rand.Rand, c Call, what string) *History {
	h := &History{What: what}
	limit := time.Now().Add(l.o.PursueLimit)
	if end := l.end(); end.Before(limit) {
		limit = end
	}
	// Each logical request goes through one door, every attempt of it.
	if !c.KeepDoor {
		c.Stream = rng.Float64() < streamShare
	}
	if c.Stream {
		h.What += " (streaming door)"
	}
	for n := 0; ; n++ {
		a := l.send(ctx, c, h)
		cl := a.Classify()
		if !cl.Retryable() {
			h.Final = a
			return h
		}
		h.SawRetryable = true
		wait := a.RetryHint()
		if wait <= 0 {
			wait = min(50*time.Millisecond<<min(n, 6), 2*time.Second)
		}
		wait = min(wait, 16*time.Second)
		wait += time.Duration(rng.Int64N(int64(wait)/2 + 1))
		if time.Now().Add(wait).After(limit) || ctx.Err() != nil {
			return h
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return h
		case <-t.C:
		}
	}
}

// end is when the run stops retrying: Recovery after the load.
func (l *Load) end() time.Time { return l.start.Add(l.o.Duration + l.o.Recovery) }

// read pursues a read and checks that it ends in a result.
func (l *Load) read(ctx context.Context, rng *rand.Rand, c Call, what string) {
	h := l.pursue(ctx, rng, c, what)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads = append(l.reads, h)
	if h.Final != nil && h.Final.Classify() != OK {
		l.readBad = append(l.readBad, fmt.Sprintf("%s: %s", what, h.Final.Describe()))
	}
}

// add adds one note with a fresh key, as kind says.
func (l *Load) add(ctx context.Context, rng *rand.Rand, principal, kind string) *KeyRecord {
	n := l.next()
	key := fmt.Sprintf("%s-k%06d", l.o.RunID, n)
	k := &KeyRecord{Key: key, Marker: "mk:" + key + ";", Principal: principal, Kind: kind}
	l.mu.Lock()
	l.keys = append(l.keys, k)
	l.mu.Unlock()
	c := Call{Principal: principal, Method: "tools/call", Name: "notes_add", Params: map[string]any{
		"name": "notes_add", "arguments": map[string]any{"text": "chaos note " + k.Marker}, "idempotencyKey": key}}
	l.sendAs(rng, kind == "dup-concurrent", kind == "resend", func(r *rand.Rand) bool { return l.addOnce(ctx, r, k, c) })
	return k
}

// sendAs pursues one logical request as its key's kind says: twice at
// once (each with a random source of its own), once and again after its
// success (resend), or once.
func (l *Load) sendAs(rng *rand.Rand, twiceAtOnce, resend bool, send func(*rand.Rand) bool) {
	switch {
	case twiceAtOnce:
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			r := l.newRand()
			go func() {
				defer wg.Done()
				send(r)
			}()
		}
		wg.Wait()
	case resend:
		if send(rng) {
			send(rng)
		}
	default:
		send(rng)
	}
}

// addOnce pursues one notes_add and records its outcome in k.
func (l *Load) addOnce(ctx context.Context, rng *rand.Rand, k *KeyRecord, c Call) bool {
	h := l.pursue(ctx, rng, c, "notes_add "+k.Key)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.Reqs = append(k.Reqs, h)
	if h.Final == nil {
		return false
	}
	id, _ := h.Final.Structured()["id"].(string)
	if h.Final.Classify() != OK || id == "" {
		k.Unexpected = append(k.Unexpected, h.Final.Describe())
		return false
	}
	k.IDs = append(k.IDs, id)
	if h.Final.Replay() {
		k.Replays++
	}
	return true
}

// deleteFlow adds a note, asks to delete it (the first round seals a
// single-use confirmation), then redeems the confirmation with a key and
// a second time without it or with another key, at once or after the
// first one's success.
func (l *Load) deleteFlow(ctx context.Context, rng *rand.Rand, principal string) {
	note := l.add(ctx, rng, principal, "delete-target")
	if !note.Succeeded() {
		return
	}
	l.confirmDelete(ctx, rng, principal, note)
}

// confirmDelete deletes note, which a keyed add made, by the confirmed
// flow deleteFlow describes, and returns its record once every
// redemption ended.
func (l *Load) confirmDelete(ctx context.Context, rng *rand.Rand, principal string, note *KeyRecord) *DeleteRecord {
	note.mu.Lock()
	id := note.IDs[0]
	note.mu.Unlock()
	d := &DeleteRecord{Note: note, NoteID: id, Key: note.Key + "-del", Mode: "after", Resend: rng.IntN(4) == 0}
	if rng.IntN(2) == 0 {
		d.Mode = "concurrent"
	}
	l.mu.Lock()
	l.deletes = append(l.deletes, d)
	l.mu.Unlock()
	args := map[string]any{"id": id}
	// The confirmation is sealed for the endpoint that asked: one door
	// for the whole flow.
	stream := rng.Float64() < streamShare
	d.Ask = l.pursue(ctx, rng, Call{Principal: principal, Method: "tools/call", Name: "notes_delete", Elicitation: true, Stream: stream, KeepDoor: true,
		Params: map[string]any{"name": "notes_delete", "arguments": args}}, "notes_delete ask "+id)
	if d.Ask.Final == nil {
		return d
	}
	state, _ := d.Ask.Final.Result["requestState"].(string)
	if d.Ask.Final.Classify() != OK || d.Ask.Final.Result["resultType"] != "input_required" || state == "" {
		d.Unexpected = append(d.Unexpected, "ask: "+d.Ask.Final.Describe())
		return d
	}
	confirm := func(key string) Call {
		p := map[string]any{"name": "notes_delete", "arguments": args, "requestState": state,
			"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}
		if key != "" {
			p["idempotencyKey"] = key
		}
		return Call{Principal: principal, Method: "tools/call", Name: "notes_delete", Elicitation: true, Stream: stream, KeepDoor: true, Params: p}
	}
	secondKey := ""
	if rng.IntN(2) == 0 {
		secondKey = d.Key + "-other"
	}
	redeem := func(r *rand.Rand, role, key string) *Redemption {
		h := l.pursue(ctx, r, confirm(key), fmt.Sprintf("notes_delete %s %s key=%q", role, id, key))
		return &Redemption{Role: role, Key: key, Hist: h, Outcome: redemptionOutcome(h)}
	}
	var first, second *Redemption
	if d.Mode == "concurrent" {
		var wg sync.WaitGroup
		wg.Add(1)
		r := l.newRand()
		go func() {
			defer wg.Done()
			second = redeem(r, "second", secondKey)
		}()
		first = redeem(rng, "first", d.Key)
		wg.Wait()
	} else {
		first = redeem(rng, "first", d.Key)
		second = redeem(rng, "second", secondKey)
	}
	rs := []*Redemption{first, second}
	if d.Resend && (first.Outcome == "deleted" || first.Outcome == "deleted-replay") {
		rs = append(rs, redeem(rng, "resend", d.Key))
	}
	l.mu.Lock()
	d.Redemptions = rs
	l.mu.Unlock()
	return d
}

// redemptionOutcome reads how a redemption ended.
func redemptionOutcome(h *History) string {
	a := h.Final
	if a == nil {
		return "gave-up"
	}
	replay := ""
	if a.Replay() {
		replay = "-replay"
	}
	switch cl := a.Classify(); {
	case cl == OK && a.Structured()["deleted"] == true:
		return "deleted" + replay
	case cl == ToolError && a.Failure()["type"] == "not_found":
		return "not-found" + replay
	case cl == Refused && a.Error.Code == -32602:
		return "refused"
	}
	return "unexpected"
}

// taskFlow creates an export task of 1 to 3 seconds with a fresh
// idempotency key, as kind says, cancels a quarter of them after a
// moment, and polls the task with tasks/get until it ends (or the run
// stops retrying).
func (l *Load) taskFlow(ctx context.Context, rng *rand.Rand, principal, kind string) {
	n := l.next()
	key := fmt.Sprintf("%s-t%06d", l.o.RunID, n)
	k := &TaskKey{Key: key, Principal: principal, Kind: kind, Seconds: 1 + rng.IntN(3)}
	// Every fourth is cancelled within a second of its creation; those
	// take 3 s, so that most cancels meet a running task. A third of the
	// others ask for their title (an input round in the task, answered
	// with tasks/update). Both by their order, not by chance, so that a
	// short run has some of each.
	l.mu.Lock()
	l.taskSeq++
	cancel := l.taskSeq%4 == 0
	ask := l.taskSeq%4 == 2
	l.mu.Unlock()
	if cancel {
		k.Seconds = 3
	}
	args := map[string]any{"seconds": k.Seconds}
	if ask {
		k.Title, args["askTitle"] = "title "+key, true
	}
	l.mu.Lock()
	l.tasks = append(l.tasks, k)
	l.mu.Unlock()
	create := Call{Principal: principal, Method: "tools/call", Name: "notes_export", Tasks: true, Elicitation: ask, Params: map[string]any{
		"name": "notes_export", "arguments": args, "idempotencyKey": key}}
	// A resend takes the answer as lost: the same create again.
	l.sendAs(rng, kind == "task-dup-concurrent", kind == "task-resend", func(r *rand.Rand) bool { return l.createOnce(ctx, r, k, create) })
	id := k.TaskID()
	if id == "" {
		return
	}
	if cancel {
		time.Sleep(time.Duration(rng.Int64N(int64(time.Second))))
		h := l.pursue(ctx, rng, Call{Principal: principal, Method: "tasks/cancel", Name: id, Tasks: true,
			Params: map[string]any{"taskId": id}}, "tasks/cancel "+id)
		k.mu.Lock()
		k.Cancel = h
		if h.Final != nil && (h.Final.Classify() != OK || h.Final.Result["resultType"] != "complete") {
			k.Unexpected = append(k.Unexpected, "tasks/cancel answered "+h.Final.Describe())
		}
		k.mu.Unlock()
	}
	if ask {
		if l.poll(ctx, rng, k, id, "input_required"); k.status() == "input_required" {
			l.answer(ctx, rng, k, id)
		}
	}
	l.poll(ctx, rng, k, id, "")
	if kind == "task-resend" {
		// Once the task ended, its key still names it.
		l.createOnce(ctx, rng, k, create)
	}
}

// createOnce pursues one create of k's task and records its answer.
func (l *Load) createOnce(ctx context.Context, rng *rand.Rand, k *TaskKey, c Call) bool {
	h := l.pursue(ctx, rng, c, "notes_export "+k.Key)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.Creates = append(k.Creates, h)
	if h.Final == nil {
		return false
	}
	id, _ := h.Final.Result["taskId"].(string)
	if h.Final.Classify() != OK || h.Final.Result["resultType"] != "task" || id == "" {
		k.Unexpected = append(k.Unexpected, "create answered "+h.Final.Describe())
		return false
	}
	k.IDs = append(k.IDs, id)
	return true
}

// answer answers the export's question with k.Title by tasks/update:
// once, twice at once, or again after its acknowledgement (a client that
// took its answer for lost), as a client may.
func (l *Load) answer(ctx context.Context, rng *rand.Rand, k *TaskKey, id string) {
	c := Call{Principal: k.Principal, Method: "tasks/update", Name: id, Tasks: true, Elicitation: true, Params: map[string]any{
		"taskId": id, "inputResponses": map[string]any{"title": map[string]any{"action": "accept", "content": map[string]any{"title": k.Title}}}}}
	x := rng.Float64()
	l.sendAs(rng, x < 0.2, x >= 0.2 && x < 0.4, func(r *rand.Rand) bool {
		h := l.pursue(ctx, r, c, "tasks/update "+id)
		k.mu.Lock()
		defer k.mu.Unlock()
		k.Updates = append(k.Updates, h)
		if h.Final == nil {
			return false
		}
		if h.Final.Classify() != OK || h.Final.Result["resultType"] != "complete" {
			k.Unexpected = append(k.Unexpected, "tasks/update answered "+h.Final.Describe())
			return false
		}
		return true
	})
}

// status is the task's status as tasks/get last told it.
func (k *TaskKey) status() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.Status
}

// poll polls the task with tasks/get as its answers ask (pollIntervalMs),
// until it ends, or has the status stopAt, or the run stops retrying.
func (l *Load) poll(ctx context.Context, rng *rand.Rand, k *TaskKey, id, stopAt string) {
	for ctx.Err() == nil {
		h := l.pursue(ctx, rng, Call{Principal: k.Principal, Method: "tasks/get", Name: id, Tasks: true,
			Params: map[string]any{"taskId": id}}, "tasks/get "+id)
		k.mu.Lock()
		k.Polls = append(k.Polls, h)
		if a := h.Final; a != nil {
			status, _ := a.Result["status"].(string)
			if a.Classify() != OK || status == "" {
				k.Unexpected = append(k.Unexpected, "tasks/get answered "+a.Describe())
				k.mu.Unlock()
				return
			}
			k.Status, k.Final = status, a
		}
		done := terminal(k.Status) || stopAt != "" && k.Status == stopAt
		k.mu.Unlock()
		if done || h.Final == nil {
			return
		}
		wait := 500 * time.Millisecond
		if ms, ok := h.Final.Result["pollIntervalMs"].(float64); ok && ms > 0 {
			wait = min(time.Duration(ms)*time.Millisecond, 2*time.Second)
		}
		if time.Now().Add(wait).After(l.end()) {
			return
		}
		time.Sleep(wait)
	}
}
