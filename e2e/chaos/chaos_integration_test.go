//go:build integration

package chaos

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/repo"
)

var (
	fullRun = flag.Bool("chaos.full", false, "the five-minute run (make chaos); otherwise the short one (make test)")
	logRoot = flag.String("chaos.logdir", "", "keep the instances' logs and the report in a new directory under this one (default: the test's temporary directory)")
	seed    = flag.Uint64("chaos.seed", 0, "seed of the faults' and the load's random choices (default: from the clock, printed)")
)

// plan is one variant of the run.
type plan struct {
	name      string
	instances int
	workers   int
	watchers  int
	load      time.Duration // new operations start until then
	pursue    time.Duration // how long one request is retried
	recovery  time.Duration // how long after the load requests may still be retried
}

var (
	shortPlan = plan{name: "short", instances: 4, workers: 10, watchers: 1, load: 40 * time.Second, pursue: 50 * time.Second, recovery: 35 * time.Second}
	fullPlan  = plan{name: "full", instances: 5, workers: 14, watchers: 2, load: 240 * time.Second, pursue: 75 * time.Second, recovery: 60 * time.Second}
)

// TestChaos runs the function as a fleet of instances (the real
// bootstrap under the runtime emulator) against DynamoDB Local and
// local-kms, under a bounded MCP load, while instances are killed,
// DynamoDB requests and responses are delayed and dropped, DynamoDB
// Local is restarted and local-kms stopped for a while; then it checks,
// from the table and the answers, that every keyed add ran exactly once,
// no acknowledged write was lost, every retryable refusal recovered, no
// gateway error came but from a killed instance, and every single-use
// confirmation deleted at most once (docs/chaos.md). -short (make test)
// is the short run; -chaos.full or MCP_CHAOS_FULL=1 (make chaos) the
// five-minute one.
func TestChaos(t *testing.T) {
	p := shortPlan
	if (*fullRun || os.Getenv("MCP_CHAOS_FULL") == "1") && !testing.Short() {
		p = fullPlan
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	bootstrap := repo.Env("MCP_CHAOS_BOOTSTRAP", filepath.Join(root, "build", "fixture", runtime.GOARCH, "bootstrap"))
	rieBin := repo.Env("AWS_LAMBDA_RIE", filepath.Join(root, ".tools/bin/aws-lambda-rie"))
	for what, path := range map[string]string{"the harnesses' function (make build/fixture/" + runtime.GOARCH + "/bootstrap)": bootstrap, "aws-lambda-rie (make tools)": rieBin} {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s is missing: %v", what, err)
		}
	}
	runSeed := *seed
	if runSeed == 0 {
		runSeed = uint64(time.Now().UnixNano())
	}
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	if *logRoot != "" {
		logDir = filepath.Join(*logRoot, time.Now().UTC().Format("20060102T150405Z")+"-"+p.name)
	}
	commit := repo.Describe(root)
	t.Logf("chaos %s run: seed %d, commit %s, logs in %s", p.name, runSeed, commit, logDir)

	ctx, cancel := context.WithTimeout(context.Background(), p.load+p.recovery+4*time.Minute)
	defer cancel()
	began := time.Now()
	c, err := StartCluster(ctx, ClusterOptions{
		RIE: rieBin, Bootstrap: bootstrap,
		EnvFile: filepath.Join(root, "deploy/sam-local-env.json"), Seed: filepath.Join(root, "deploy/local-kms-seed.yaml"),
		Instances: p.instances, Dir: filepath.Join(dir, "data"), LogDir: logDir, RandSeed: runSeed,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()

	writes := NewWrites()
	c.Proxy.Watch(writes.Watch)
	load := NewLoad(c.Front, LoadOptions{Workers: p.workers, Watchers: p.watchers, Duration: p.load, PursueLimit: p.pursue, Recovery: p.recovery,
		RunID: fmt.Sprintf("r%x", runSeed&0xffffff), Seed: runSeed})
	faults := NewFaults(c, p == fullPlan)
	faults.WatchedDelete = load.IsWatchedDelete
	loadStart := time.Now()
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		faults.Run(ctx, p.load)
	}()
	load.Run(ctx)
	<-faultsDone
	// The workers still running (a duplicate delivery, a retried one)
	// end before the table is read.
	workersDone := make(chan struct{})
	go func() {
		c.Invoke.Wait()
		close(workersDone)
	}()
	select {
	case <-workersDone:
	case <-time.After(90 * time.Second):
		t.Errorf("the harness failed: task workers still running 90 s after the load")
	}
	c.Pool.Settle()
	total := time.Since(loadStart)

	notes, err := ScanNotes(ctx, c.DynamoDB.Client(), c.Table)
	if err != nil {
		t.Fatal(err)
	}
	res := load.Check(notes, c.Pool.KilledTasks(), writes)
	events, duplicated := c.Invoke.Accepted()
	deliveries, deliveryFailed := c.Invoke.Delivered()
	sum := Summary{
		Title: fmt.Sprintf("chaos %s run of the function %s (harness at %s), seed %d, %s from start to checks",
			p.name, load.Version(), commit, runSeed, time.Since(began).Round(time.Second)),
		Instances: p.instances, Workers: p.workers, Load: p.load, Total: total,
		Faults: faults.Counts(), Timeline: faults.Timeline(), Ops: load.Ops(),
		Pool: c.Pool.Stats(), Events: events, Duplicated: duplicated, Deliveries: deliveries, DeliveryFailed: deliveryFailed,
	}
	var report bytes.Buffer
	WriteReport(&report, sum, load.Stats(), res)
	ix, err := IndexLogs(c.Logs())
	if err != nil {
		t.Error(err)
	}
	var details bytes.Buffer
	WriteViolations(&details, res.Violations, ix, len(res.Violations))
	if err := os.MkdirAll(logDir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(logDir, "report.txt"), append(report.Bytes(), details.Bytes()...), 0o644)
	}
	// The table always, on the test's output: make chaos prints it.
	fmt.Fprint(os.Stdout, report.String())
	if len(res.Violations) > 0 {
		var some bytes.Buffer
		WriteViolations(&some, res.Violations, ix, 15)
		fmt.Fprint(os.Stdout, some.String())
		fmt.Fprintf(os.Stdout, "\nevery violation with its log lines: %s\n", filepath.Join(logDir, "report.txt"))
	}

	for _, err := range append(faults.Errors(), c.Pool.Errors()...) {
		t.Errorf("the harness failed: %v", err)
	}
	// A killed instance's function must not run on: its answer would
	// reach no one, but its writes would still land after the "crash".
	if ix != nil && ix.Orphans > 0 {
		t.Errorf("the harness failed: %d killed functions ran on and tried to answer (see the instances' logs)", ix.Orphans)
	}
	// A run that injected nothing, or did nothing, proves nothing.
	injected := sum.Faults
	for _, f := range []string{FaultKill, FaultKillAfter, FaultDropRequest, FaultDropResponse, FaultDropComplete, FaultDropOneStep, FaultDDBRestart, FaultKMSOutage,
		FaultKillWorker, FaultKillOutcome, FaultDropOutcome, FaultDelayOutcome, FaultDropAnswer, FaultKillListener, FaultKillDeleted} {
		if injected[f] == 0 {
			t.Errorf("no fault %q was injected", f)
		}
	}
	if res.KeysOneStep == 0 {
		t.Errorf("the load did too little: no key was committed in one step")
	}
	if res.KeysSucceeded == 0 || res.DeletesSucceeded == 0 || res.Reads == 0 || res.TaskEnds["completed"] == 0 || res.TaskEnds["cancelled"] == 0 || res.TaskUpdates == 0 {
		t.Errorf("the load did too little: %d keys succeeded, %d deletes, %d reads, %d tasks completed, %d cancelled, %d tasks/update",
			res.KeysSucceeded, res.DeletesSucceeded, res.Reads, res.TaskEnds["completed"], res.TaskEnds["cancelled"], res.TaskUpdates)
	}
	if lr := res.Listen; lr.Ended == 0 || lr.ByNotification == 0 || lr.Owed == 0 {
		t.Errorf("the load did too little: %d listen streams ended with their result, %d deletions learned by notification, %d owed by a stream",
			lr.Ended, lr.ByNotification, lr.Owed)
	}
	if streamed := sum.Pool.Streamed; streamed == 0 || duplicated == 0 || sum.Pool.WorkerRuns == 0 {
		t.Errorf("the load did too little: %d requests through the streaming door, %d worker runs, %d delivered twice", streamed, sum.Pool.WorkerRuns, duplicated)
	}
	for check, n := range res.ByCheck() {
		if n > 0 {
			t.Errorf("%d violations of %s", n, check)
		}
	}
}
