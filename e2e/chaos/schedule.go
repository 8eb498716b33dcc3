package chaos

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The names faults are counted under.
const (
	FaultKill          = "instance killed (SIGKILL)"
	FaultKillMidCall   = "  of them mid-call"
	FaultKillAfter     = "instance killed right after its write was applied"
	FaultDelay         = "DynamoDB request delayed"
	FaultDelayResponse = "DynamoDB response delayed (write applied)"
	FaultDropRequest   = "DynamoDB request dropped"
	FaultDropResponse  = "DynamoDB response dropped (write applied)"
	FaultDropComplete  = "claim-completing write's response dropped"
	FaultDropOneStep   = "one-step commit's response dropped (applied)"
	FaultDDBRestart    = "DynamoDB Local restarted"
	FaultDDBRefused    = "  DynamoDB requests refused while it restarted"
	FaultKMSOutage     = "local-kms stopped"
	FaultKMSDown       = "  seconds local-kms was down"
	FaultInjectedGwErr = "gateway errors from killed instances (retried)"
	FaultKillWorker    = "task worker killed mid-run"
	FaultKillOutcome   = "task worker killed right after its outcome write was applied"
	FaultDropOutcome   = "task outcome write's response dropped (applied)"
	FaultDelayOutcome  = "task outcome write's response delayed"
	FaultDropAnswer    = "task answer write's response dropped (applied)"
	FaultKillListener  = "instance holding a listen stream killed"
	FaultKillDeleted   = "instance killed right after a watched note's delete was applied"
)

// Step is one fault in a schedule: at a fraction of the load's duration.
type Step struct {
	At   float64
	Name string
	Do   func(ctx context.Context) error
}

// Faults injects faults into a cluster on a schedule and counts them.
type Faults struct {
	c     *Cluster
	steps []Step
	// WatchedDelete picks the delete of a note a watcher listens to
	// (Load.IsWatchedDelete), for the kill right after one is applied;
	// set it before Run.
	WatchedDelete func(body []byte) bool

	mu       sync.Mutex
	timeline []event
	counts   map[string]int
	errs     []error
	kmsDown  time.Duration
	began    time.Time
}

// NewFaults plans the run's faults. full plans the five-minute run's
// (more kills, two DynamoDB restarts, a longer key-service outage);
// otherwise the short run's. Faults stop at 85% of the load, so that
// the last operations meet a recovered system.
func NewFaults(c *Cluster, full bool) *Faults {
	f := &Faults{c: c, counts: map[string]int{}}
	kills := []float64{0.15, 0.45, 0.67}
	afterWrite := []float64{0.28}
	restarts := []float64{0.55}
	kmsFrom, kmsTo := 0.64, 0.76
	workerKills := []float64{0.35, 0.6}
	// Late enough that the outcome writes before it meet the drop and
	// delay rules (armed at 0.07): a short run completes only a few tasks
	// while the faults are on, and the run must see both.
	outcomeKills := []float64{0.5}
	listenerKills := []float64{0.4}
	deletedKills := []float64{0.3}
	if full {
		listenerKills = []float64{0.25, 0.56}
		deletedKills = []float64{0.18, 0.36, 0.7}
		workerKills = []float64{0.12, 0.3, 0.48, 0.6, 0.72}
		outcomeKills = []float64{0.2, 0.52}
		kills = []float64{0.08, 0.16, 0.24, 0.33, 0.45, 0.58, 0.67, 0.74, 0.80}
		afterWrite = []float64{0.20, 0.38, 0.50}
		restarts = []float64{0.42, 0.62}
		kmsFrom, kmsTo = 0.66, 0.76
	}
	for _, at := range kills {
		f.steps = append(f.steps, Step{At: at, Name: "kill a busy instance", Do: f.killBusy})
	}
	for _, at := range afterWrite {
		f.steps = append(f.steps, Step{At: at, Name: "kill the instance whose note write was just applied", Do: f.killAfterWrite})
	}
	for _, at := range restarts {
		f.steps = append(f.steps, Step{At: at, Name: "restart DynamoDB Local", Do: f.restartDynamoDB})
	}
	for _, at := range outcomeKills {
		f.steps = append(f.steps, Step{At: at, Name: "kill the worker whose task outcome write was just applied", Do: f.killAfterOutcome})
	}
	for _, at := range listenerKills {
		f.steps = append(f.steps, Step{At: at, Name: "kill an instance holding a listen stream", Do: f.killListener})
	}
	for _, at := range deletedKills {
		f.steps = append(f.steps, Step{At: at, Name: "kill the instance whose delete of a watched note was just applied", Do: f.killAfterDelete})
	}
	for _, at := range workerKills {
		f.steps = append(f.steps, Step{At: at, Name: "kill an instance running a task's worker", Do: f.killWorker})
	}
	var kmsStopped time.Time
	f.steps = append(f.steps,
		Step{At: 0.05, Name: "proxy: delay 4% of requests and 2% of responses, drop 2% of requests and 2% of responses", Do: f.noise},
		Step{At: 0.32, Name: "proxy: drop 25% of claim-completing responses, and of one-step commits", Do: f.dropCompletions},
		// After the noise, whose rules replace the proxy's.
		Step{At: 0.07, Name: "proxy: drop the first and every second task outcome write's response, delay the others'", Do: f.outcomeFaults},

		Step{At: kmsFrom, Name: "stop local-kms", Do: func(ctx context.Context) error {
			c.HaltKMS()
			kmsStopped = time.Now()
			f.count(FaultKMSOutage)
			return nil
		}},
		Step{At: kmsTo, Name: "start local-kms", Do: func(ctx context.Context) error {
			err := c.StartKMS(ctx)
			f.mu.Lock()
			f.kmsDown += time.Since(kmsStopped)
			f.mu.Unlock()
			return err
		}},
		Step{At: 0.85, Name: "proxy: no more faults", Do: func(ctx context.Context) error {
			c.Proxy.SetRules(nil)
			return nil
		}},
	)
	slices.SortStableFunc(f.steps, func(a, b Step) int { return cmp.Compare(a.At, b.At) })
	return f
}

func (f *Faults) count(name string) {
	f.mu.Lock()
	f.counts[name]++
	f.mu.Unlock()
}

// Run carries the schedule out over d from now: each step at its time,
// whatever the steps before it take (a DynamoDB Local restart takes
// seconds). It returns when every step ran (or ctx ended).
func (f *Faults) Run(ctx context.Context, d time.Duration) {
	start := time.Now()
	f.mu.Lock()
	f.began = start
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range f.steps {
		at := time.Duration(float64(d) * s.At)
		t := time.NewTimer(time.Until(start.Add(at)))
		select {
		case <-ctx.Done():
			t.Stop()
			wg.Wait()
			return
		case <-t.C:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := time.Since(start)
			err := s.Do(ctx)
			f.mu.Lock()
			defer f.mu.Unlock()
			line := s.Name
			if took := time.Since(start) - began; took > time.Second {
				line += fmt.Sprintf(" (took %.1fs)", took.Seconds())
			}
			if err != nil {
				line += ": " + err.Error()
				f.errs = append(f.errs, fmt.Errorf("chaos: %s: %w", s.Name, err))
			}
			f.timeline = append(f.timeline, event{at: began, what: line})
		}()
	}
	wg.Wait()
}

// event is one line of the timeline.
type event struct {
	at   time.Duration // since the schedule began
	what string
}

// note adds a detail to the timeline, at the time it happened.
func (f *Faults) note(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.timeline = append(f.timeline, event{at: time.Since(f.began), what: "  " + what})
}

// Timeline is what was done when, in order.
func (f *Faults) Timeline() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	evs := slices.Clone(f.timeline)
	slices.SortStableFunc(evs, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("t=%6.1fs %s", e.at.Seconds(), e.what))
	}
	return out
}

// Errors are the steps that failed (the harness's failures, not the
// function's).
func (f *Faults) Errors() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.errs)
}

func (f *Faults) killBusy(ctx context.Context) error {
	// Every worker may be waiting out a retry-after at once: wait a
	// while for a call to kill, else kill an idle instance (the report
	// counts the kills mid-call apart).
	slot, mid := f.c.Pool.KillBusy(ctx, 10*time.Second)
	if slot < 0 {
		return fmt.Errorf("no instance to kill")
	}
	f.note(fmt.Sprintf("killed i%d, mid-call: %v", slot, mid))
	return nil
}

// killAfterWrite arms a rule that lets the next note write reach
// DynamoDB, then kills the instance that made it before it hears back:
// the crash between a tool's effect and its claim's completion.
func (f *Faults) killAfterWrite(ctx context.Context) error {
	f.c.Proxy.AddRule(&Rule{Name: FaultKillAfter, Ops: []string{"TransactWriteItems"}, Contains: `"text"`, Limit: 1, Action: DropResponse,
		Then: func(tag string) {
			if i, err := strconv.Atoi(strings.TrimPrefix(tag, "i")); err == nil {
				f.c.Pool.Kill(i)
				f.note(fmt.Sprintf("killed i%d right after its note write was applied", i))
			}
		}})
	return nil
}

// killWorker kills an instance that has run a task's worker for at least
// 300 ms (past taking its task, in the handler's run), waiting up to 20 s
// for one.
func (f *Faults) killWorker(ctx context.Context) error {
	slot, task := f.c.Pool.KillWorker(ctx, 300*time.Millisecond, 20*time.Second)
	if slot < 0 {
		return fmt.Errorf("no task worker to kill")
	}
	f.count(FaultKillWorker)
	f.note(fmt.Sprintf("killed i%d running the worker of task %s", slot, task))
	return nil
}

// killListener kills an instance that has held a listen stream open for
// at least a second (acknowledged, reading the log), waiting up to 20 s
// for one: its client gets the gateway's error and listens again.
func (f *Faults) killListener(ctx context.Context) error {
	slot := f.c.Pool.KillListener(ctx, time.Second, 20*time.Second)
	if slot < 0 {
		return fmt.Errorf("no instance holding a listen stream to kill")
	}
	f.count(FaultKillListener)
	f.note(fmt.Sprintf("killed i%d holding a listen stream", slot))
	return nil
}

// killAfterDelete arms a rule, tried before every other, that lets the
// next delete of a watched note reach DynamoDB, then kills the instance
// that made it before it hears back: the crash between a change and its
// notification, which a watcher's stream must still deliver.
func (f *Faults) killAfterDelete(ctx context.Context) error {
	f.c.Proxy.InsertRule(&Rule{Name: FaultKillDeleted, Ops: []string{"TransactWriteItems"}, Match: f.WatchedDelete, Limit: 1, Action: DropResponse,
		Then: func(tag string) {
			if i, err := strconv.Atoi(strings.TrimPrefix(tag, "i")); err == nil {
				f.c.Pool.Kill(i)
				f.note(fmt.Sprintf("killed i%d right after its delete of a watched note was applied", i))
			}
		}})
	return nil
}

// outcomeFaults drops, after DynamoDB applied it, the response of the
// first and every second write that records a task's outcome, and
// answers the others a second late: the run makes few of them (a task
// takes seconds), and each must meet a fault. The first and every second
// write of a tasks/update's answers lose their response too.
func (f *Faults) outcomeFaults(ctx context.Context) error {
	f.c.Proxy.AddRule(&Rule{Name: FaultDropOutcome, Ops: []string{"PutItem"}, Match: IsTaskOutcome, Every: 2, Action: DropResponse})
	f.c.Proxy.AddRule(&Rule{Name: FaultDelayOutcome, Ops: []string{"PutItem"}, Match: IsTaskOutcome, Action: DelayResponse, Delay: time.Second})
	f.c.Proxy.AddRule(&Rule{Name: FaultDropAnswer, Ops: []string{"PutItem"}, Match: IsTaskAnswer, Every: 2, Action: DropResponse})
	return nil
}

// killAfterOutcome arms a rule, tried before every other, that lets the
// next task outcome write reach DynamoDB, then kills the worker that
// made it before it hears back.
func (f *Faults) killAfterOutcome(ctx context.Context) error {
	f.c.Proxy.InsertRule(&Rule{Name: FaultKillOutcome, Ops: []string{"PutItem"}, Match: IsTaskOutcome, Limit: 1, Action: DropResponse,
		Then: func(tag string) {
			if i, err := strconv.Atoi(strings.TrimPrefix(tag, "i")); err == nil {
				f.c.Pool.Kill(i)
				f.note(fmt.Sprintf("killed i%d right after its task outcome write was applied", i))
			}
		}})
	return nil
}

func (f *Faults) restartDynamoDB(ctx context.Context) error {
	f.count(FaultDDBRestart)
	return f.c.RestartDynamoDB(ctx)
}

// noise delays and drops a few of every kind of request and response.
func (f *Faults) noise(ctx context.Context) error {
	f.c.Proxy.SetRules([]*Rule{
		{Name: FaultDelay, Probability: 0.04, Action: Delay, Delay: 400 * time.Millisecond},
		{Name: FaultDelayResponse, Probability: 0.02, Action: DelayResponse, Delay: 400 * time.Millisecond},
		{Name: FaultDropRequest, Probability: 0.02, Action: DropRequest},
		{Name: FaultDropResponse, Probability: 0.02, Action: DropResponse},
	})
	return nil
}

// dropCompletions drops, after DynamoDB applied it, the response of a
// quarter of the writes that complete a claim taken first (an UpdateItem,
// or a transaction when the tool's writes are enlisted in it: a keyed
// delete), and of a quarter of the one-step commits (a keyed add's one
// transaction: the claim, the note, its count and the result), on top of
// the noise: the SDK sends it again with its token, and a retry that
// still gets no answer is told the call was not committed, and replays it.
func (f *Faults) dropCompletions(ctx context.Context) error {
	f.c.Proxy.AddRule(&Rule{Name: FaultDropComplete, Ops: []string{"UpdateItem", "TransactWriteItems"}, Contains: `":completed"`,
		Probability: 0.25, Action: DropResponse})
	f.c.Proxy.AddRule(&Rule{Name: FaultDropOneStep, Ops: []string{"TransactWriteItems"}, Match: IsOneStepCommit,
		Probability: 0.25, Action: DropResponse})
	return nil
}

// Counts are the faults injected, by name.
func (f *Faults) Counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.counts {
		out[k] = v
	}
	for k, v := range f.c.Proxy.Counts() {
		out[k] += v
	}
	ps := f.c.Pool.Stats()
	out[FaultKill] = ps.Kills
	out[FaultKillMidCall] = ps.KilledMidCall
	out[FaultInjectedGwErr] = ps.InjectedGatewayErrors
	out[FaultDDBRefused] = f.c.Proxy.Refused()
	out[FaultKMSDown] = int(f.kmsDown.Round(time.Second).Seconds())
	return out
}

// FaultOrder is the order the report lists faults in.
var FaultOrder = []string{FaultKill, FaultKillMidCall, FaultKillAfter, FaultKillWorker, FaultKillOutcome, FaultKillListener, FaultKillDeleted, FaultInjectedGwErr, FaultDelay,
	FaultDelayResponse, FaultDropRequest, FaultDropResponse, FaultDropComplete, FaultDropOneStep, FaultDropOutcome, FaultDelayOutcome, FaultDropAnswer, FaultDDBRestart,
	FaultDDBRefused, FaultKMSOutage, FaultKMSDown}
