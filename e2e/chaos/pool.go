package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/serverless-mcp/mcp-lambda/e2e/internal/harness"
)

// Headers between the load generator and the pool front. They stop at
// the front: the function never sees them.
const (
	// HeaderPrincipal names the caller; the front passes it to the
	// function as a Lambda authorizer's principal id.
	HeaderPrincipal = "X-Chaos-Principal"
	// HeaderRequestID is the front's id of the request, also the event's
	// requestContext.requestId (the function logs it as
	// gateway_request_id).
	HeaderRequestID = "X-Chaos-Request-Id"
	// HeaderInstance is the instance that served the request: slot and
	// generation, such as i2.g3.
	HeaderInstance = "X-Chaos-Instance"
	// HeaderInjected marks a gateway error that a deliberate kill of the
	// instance caused.
	HeaderInjected = "X-Chaos-Injected"
	// HeaderPin, on a request, sends it to one slot (its number) rather
	// than any idle one: a soak compares an instance under load with one
	// that served only the warm-up.
	HeaderPin = "X-Chaos-Pin"
	// HeaderDoor, on a request, picks the function's door: DoorStream
	// invokes it as a function URL in RESPONSE_STREAM mode does (a
	// function URL event, answered in the HTTP integration response
	// format); otherwise as the HTTP API does (buffered).
	HeaderDoor = "X-Chaos-Door"
	DoorStream = "stream"
)

// Instance is one function instance: what the pool needs of an emulator.
type Instance interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
	Kill()
	Exited() <-chan struct{}
}

// Starter starts the instance of a slot, generation gen.
type Starter func(ctx context.Context, slot, gen int) (Instance, error)

// Pool is the loopback front of a fleet of instances, each serving one
// invocation at a time (the emulator crashes if a second one starts
// while one runs): a request goes to an idle instance, or waits for one,
// as API Gateway and Lambda do. It converts HTTP to API Gateway v2 events
// as every front does (harness.Event, internal/testenv/rie's NewEvent),
// and kills and replaces instances on demand.
type Pool struct {
	start Starter

	mu    sync.Mutex
	ready *sync.Cond // signalled when a slot becomes idle
	slots []*slot
	next  int
	stats PoolStats
	rng   *rand.Rand
	errs  []error // failures to replace an instance
	done  bool    // closed

	seq atomic.Uint64
	wg  sync.WaitGroup // replacements in progress
	// killedTasks counts, by task id, the kills of an instance while it
	// ran the task's worker.
	killedTasks map[string]int
}

type slot struct {
	idx    int
	gen    int
	inst   Instance
	busy   bool
	down   bool         // killed or ended; a replacement is starting
	killed map[int]bool // the generations killed deliberately
	// task is the task whose worker invocation the slot is running ("":
	// none), since when; listening says it holds a listen stream open
	// (subscriptions/listen), since when.
	task      string
	listening bool
	since     time.Time
}

// PoolStats count what the front saw.
type PoolStats struct {
	Requests int
	// Kills are deliberate kills; KilledMidCall those that hit an
	// invocation in flight.
	Kills, KilledMidCall int
	// InjectedGatewayErrors are gateway errors answered because the
	// instance was killed deliberately; GatewayErrors any other.
	InjectedGatewayErrors, GatewayErrors int
	// Replacements are instances started in place of ended ones;
	// Unexpected instances that ended without being killed.
	Replacements, UnexpectedExits int
	// Streamed are the requests through the streaming door.
	Streamed int
	// WorkerRuns are the asynchronous invocations run (a task's worker);
	// KilledWorkers the kills that hit one while it ran, and
	// WorkerErrors the runs that failed otherwise.
	WorkerRuns, KilledWorkers, WorkerErrors int
}

// NewPool starts n instances with start and returns their front. seed
// makes the choice of instance to kill repeatable.
func NewPool(ctx context.Context, n int, start Starter, seed uint64) (*Pool, error) {
	p := &Pool{start: start, rng: rand.New(rand.NewPCG(seed, 7)), killedTasks: map[string]int{}}
	p.ready = sync.NewCond(&p.mu)
	for i := range n {
		inst, err := start(ctx, i, 0)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("chaos: instance %d: %w", i, err)
		}
		p.slots = append(p.slots, &slot{idx: i, inst: inst, killed: map[int]bool{}})
	}
	return p, nil
}

// Stats returns the counts so far.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Errors are the failures to start a replacement instance.
func (p *Pool) Errors() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]error(nil), p.errs...)
}

// acquire waits for an idle instance: any, or slot pin's when pin >= 0.
func (p *Pool) acquire(ctx context.Context, pin int) (*slot, int, Instance, error) {
	stop := harness.WakeOnDone(ctx, p.ready)
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, nil, err
		}
		if p.done {
			return nil, 0, nil, errClosed
		}
		for i := range p.slots {
			s := p.slots[(p.next+i)%len(p.slots)]
			if pin >= 0 && s.idx != pin {
				continue
			}
			if !s.busy && !s.down {
				p.next = (s.idx + 1) % len(p.slots)
				s.busy = true
				return s, s.gen, s.inst, nil
			}
		}
		p.ready.Wait()
	}
}

// release gives the slot back after an invocation of generation gen.
func (p *Pool) release(s *slot, gen int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.gen == gen {
		s.busy, s.task, s.listening = false, "", false
		p.ready.Broadcast()
	}
}

// ServeHTTP implements http.Handler: one invocation on an idle instance.
func (p *Pool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, ok := harness.ReadBody(w, r)
	if !ok {
		return
	}
	id := fmt.Sprintf("chaos-%07d", p.seq.Add(1))
	principal := r.Header.Get(HeaderPrincipal)
	pin := -1
	if v := r.Header.Get(HeaderPin); v != "" {
		var err error
		if pin, err = strconv.Atoi(v); err != nil || pin < 0 || pin >= len(p.slots) {
			http.Error(w, "front: no slot "+v, http.StatusBadRequest)
			return
		}
	}
	stream := r.Header.Get(HeaderDoor) == DoorStream
	r.Header.Del(HeaderPrincipal)
	r.Header.Del(HeaderPin)
	r.Header.Del(HeaderDoor)
	payload, err := harness.Event(r, body, id, principal, stream)
	if err != nil {
		http.Error(w, "front: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set(HeaderRequestID, id)
	s, gen, inst, err := p.acquire(r.Context(), pin)
	if err != nil {
		// The caller went away while it waited: nothing was invoked.
		http.Error(w, "front: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	p.mu.Lock()
	p.stats.Requests++
	if stream {
		p.stats.Streamed++
	}
	if r.Header.Get("Mcp-Method") == "subscriptions/listen" {
		s.listening, s.since = true, time.Now()
	}
	p.mu.Unlock()
	w.Header().Set(HeaderInstance, fmt.Sprintf("i%d.g%d", s.idx, gen))
	out, err := harness.Invoke(r, inst.Invoke, payload)
	if err != nil {
		injected := p.failed(s, gen, inst, false)
		if injected {
			w.Header().Set(HeaderInjected, "kill")
		}
		http.Error(w, "front: "+err.Error(), http.StatusBadGateway)
		return
	}
	p.release(s, gen)
	harness.Respond(w, out, stream)
}

// InvokeWorker runs one asynchronous invocation of the function — a task
// worker's event, {"mcpTask":"<id>"} — on an idle instance, as Lambda
// runs an Event invocation: the Invoke API's stand-in (rie.InvokeAPI)
// calls it. A kill of the instance while it runs is counted against the
// task (KilledTasks).
func (p *Pool) InvokeWorker(ctx context.Context, payload []byte) ([]byte, error) {
	var ev struct {
		Task string `json:"mcpTask"`
	}
	_ = json.Unmarshal(payload, &ev)
	s, gen, inst, err := p.acquire(ctx, -1)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.stats.WorkerRuns++
	s.task, s.since = ev.Task, time.Now()
	p.mu.Unlock()
	out, err := inst.Invoke(ctx, payload)
	if err != nil {
		p.failed(s, gen, inst, true)
		return nil, err
	}
	p.release(s, gen)
	return out, nil
}

// KilledTasks are the tasks whose worker was killed while it ran them,
// with how many times.
func (p *Pool) KilledTasks() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.killedTasks)
}

// failed accounts for a failed invocation of generation gen — injected
// when the instance was killed deliberately — and has an instance that
// ended on its own replaced.
func (p *Pool) failed(s *slot, gen int, inst Instance, worker bool) (injected bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	injected = s.killed[gen]
	switch {
	case worker && !injected:
		p.stats.WorkerErrors++
	case worker:
	case injected:
		p.stats.InjectedGatewayErrors++
	default:
		p.stats.GatewayErrors++
	}
	ended := false
	select {
	case <-inst.Exited():
		ended = true
	default:
	}
	if ended && s.gen == gen && !s.down {
		// It ended without being killed: replace it, and count it.
		p.stats.UnexpectedExits++
		s.down = true
		p.replaceLocked(s)
	} else if !ended && s.gen == gen && !s.down {
		s.busy, s.task, s.listening = false, "", false
		p.ready.Broadcast()
	}
	return injected
}

// KillBusy kills, with SIGKILL, an instance that is serving an
// invocation (waiting up to wait for one to be busy; an idle one
// otherwise), and starts a fresh one in its place. It returns the slot
// killed and whether it was mid-call.
func (p *Pool) KillBusy(ctx context.Context, wait time.Duration) (int, bool) {
	deadline := time.Now().Add(wait)
	for {
		p.mu.Lock()
		var busy, live []*slot
		for _, s := range p.slots {
			if !s.down {
				live = append(live, s)
				if s.busy {
					busy = append(busy, s)
				}
			}
		}
		if len(busy) > 0 || (time.Now().After(deadline) && len(live) > 0) {
			pick := live
			if len(busy) > 0 {
				pick = busy
			}
			s := pick[p.rng.IntN(len(pick))]
			mid := s.busy
			p.killLocked(s)
			p.mu.Unlock()
			return s.idx, mid
		}
		p.mu.Unlock()
		if ctx.Err() != nil || time.Now().After(deadline.Add(10*time.Second)) {
			return -1, false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Kill kills the instance in slot idx now, whatever it is doing, and
// starts a fresh one in its place (a proxy rule's Then: a crash right
// after a write).
func (p *Pool) Kill(idx int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if idx < 0 || idx >= len(p.slots) || p.slots[idx].down {
		return
	}
	p.killLocked(p.slots[idx])
}

// KillWorker kills, with SIGKILL, an instance that has been running a
// task's worker for at least ran, waiting up to wait for one; it returns
// the slot and the task, or -1 if none came.
func (p *Pool) KillWorker(ctx context.Context, ran, wait time.Duration) (int, string) {
	return p.killRunning(ctx, ran, wait, func(s *slot) bool { return s.task != "" })
}

// KillListener kills, with SIGKILL, an instance that has held a listen
// stream open for at least ran, waiting up to wait for one; it returns
// the slot, or -1 if none came.
func (p *Pool) KillListener(ctx context.Context, ran, wait time.Duration) int {
	idx, _ := p.killRunning(ctx, ran, wait, func(s *slot) bool { return s.listening })
	return idx
}

// killRunning kills a busy instance that what picks, busy for at least
// ran, waiting up to wait for one; it returns the slot and the task it
// ran ("" for none), or -1.
func (p *Pool) killRunning(ctx context.Context, ran, wait time.Duration, what func(*slot) bool) (int, string) {
	deadline := time.Now().Add(wait)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		p.mu.Lock()
		var running []*slot
		for _, s := range p.slots {
			if !s.down && s.busy && what(s) && time.Since(s.since) >= ran {
				running = append(running, s)
			}
		}
		if len(running) > 0 {
			s := running[p.rng.IntN(len(running))]
			task := s.task
			p.killLocked(s)
			p.mu.Unlock()
			return s.idx, task
		}
		p.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	return -1, ""
}

func (p *Pool) killLocked(s *slot) {
	p.stats.Kills++
	if s.busy {
		p.stats.KilledMidCall++
	}
	if s.busy && s.task != "" {
		p.stats.KilledWorkers++
		p.killedTasks[s.task]++
	}
	s.killed[s.gen] = true
	s.down = true
	// SIGKILL at once: the invocation in flight gets no answer.
	inst := s.inst
	inst.Kill()
	p.replaceLocked(s)
}

// replaceLocked starts a fresh instance in slot s, in the background;
// s is down until it runs.
func (p *Pool) replaceLocked(s *slot) {
	old := s.inst
	gen := s.gen + 1
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		old.Kill() // an instance that ended by itself: reap what is left
		var inst Instance
		var err error
		for attempt := 0; attempt < 5; attempt++ {
			if inst, err = p.start(context.Background(), s.idx, gen); err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.errs = append(p.errs, fmt.Errorf("chaos: replacing instance %d: %w", s.idx, err))
			return
		}
		if p.done {
			inst.Kill()
			return
		}
		s.inst, s.gen, s.busy, s.down, s.task, s.listening = inst, gen, false, false, "", false
		p.stats.Replacements++
		p.ready.Broadcast()
	}()
}

// Settle waits until no replacement is starting.
func (p *Pool) Settle() { p.wg.Wait() }

// Close kills every instance.
func (p *Pool) Close() {
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.slots {
		if s.inst != nil {
			s.inst.Kill()
		}
		s.down = true
	}
	p.ready.Broadcast()
}

// errClosed is the error of a request to a closed pool.
var errClosed = errors.New("chaos: the pool is closed")
