//go:build integration

package abuse

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/repo"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/samlocal"
)

var (
	fullRun = flag.Bool("abuse.full", false, "the run of a few minutes (make abuse); otherwise the short one (make test)")
	logRoot = flag.String("abuse.logdir", "", "keep the logs and the report in a new directory under this one (default: the test's temporary directory)")
	seed    = flag.Uint64("abuse.seed", 0, "seed of the honest callers' random choices (default: from the clock, printed)")
)

// plan is one variant of the run.
type plan struct {
	name string
	load time.Duration
	// The fleet's instances: started at once, and at most.
	warm, max int
}

var (
	shortPlan = plan{name: "short", load: 50 * time.Second, warm: 3, max: 10}
	fullPlan  = plan{name: "full", load: 200 * time.Second, warm: 4, max: 12}
)

// The run's settings. The quotas are far below the defaults (600 calls
// a minute, 10 live tasks) so that a run of under a minute meets each of
// them several times: a 20-second calls window of 40 calls is the
// default's rate in windows a short run sees three of. The memory target
// keeps the default calls quota: its hostile caller needs about 125
// calls in a window to reach its share of the memory store.
var (
	tableQuotas  = Quotas{Calls: 40, Window: 20 * time.Second, Tasks: 3}
	memoryQuotas = Quotas{Calls: 600, Window: time.Minute, Tasks: 3}
	breaker      = "3/30s"
	// slowRead is how long the proxy holds the hostile's note book's
	// reads back while it hangs up (after hangUpAfter).
	slowRead = 400 * time.Millisecond
)

// memoryShare is the tasks one caller may hold in a memory task store
// made by tasks.NewMemory: tasks.DefaultMaxTasks / tasks.DefaultShares.
// (Package tasks is not imported here: it brings the Lambda client,
// which this module does not otherwise need.)
const memoryShare = 10_000 / 8

// The callers' addresses: all of 127/8 is loopback.
const (
	hostileAddr = "127.0.0.66"
	honestAddr  = "127.0.0.%d"
)

// TestAbuse runs honest callers and a hostile one against the function
// through the Lambda path (a fleet of instances under the runtime
// emulator on DynamoDB Local) and as two local servers (one on DynamoDB
// Local, one in memory), and fails on an honest call refused for
// another's behaviour, a refusal that wrote, a breaker opened by a
// caller, the hostile over a quota, or a hostile request logged as a
// fault (docs/abuse.md). -short (make test) is the short run;
// -abuse.full or MCP_ABUSE_FULL=1 (make abuse) the long one.
// MCP_ABUSE_QUOTAS, if set, is the functions' MCP_QUOTAS in place of the
// run's (the checks keep the run's): MCP_ABUSE_QUOTAS=off shows the
// checks fail without quotas.
func TestAbuse(t *testing.T) {
	p := shortPlan
	if (*fullRun || os.Getenv("MCP_ABUSE_FULL") == "1") && !testing.Short() {
		p = fullPlan
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	bootstrap := repo.Env("MCP_ABUSE_BOOTSTRAP", filepath.Join(root, "build", "fixture", runtime.GOARCH, "bootstrap"))
	rieBin := repo.Env("AWS_LAMBDA_RIE", filepath.Join(root, ".tools/bin/aws-lambda-rie"))
	for what, path := range map[string]string{"the harnesses' function (make build/fixture/" + runtime.GOARCH + "/bootstrap)": bootstrap, "aws-lambda-rie (make tools)": rieBin} {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s is missing: %v", what, err)
		}
	}
	localBin := os.Getenv("MCP_ABUSE_LOCAL_BIN")
	if localBin == "" {
		localBin = filepath.Join(t.TempDir(), "fixture")
		cmd := exec.Command("go", "build", "-o", localBin, "./functions/fixture")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the local server: %v\n%s", err, out)
		}
	}
	runSeed := *seed
	if runSeed == 0 {
		runSeed = uint64(time.Now().UnixNano())
	}
	logDir := filepath.Join(t.TempDir(), "logs")
	if *logRoot != "" {
		logDir = filepath.Join(*logRoot, time.Now().UTC().Format("20060102T150405Z")+"-"+p.name)
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	commit := repo.Describe(root)
	t.Logf("abuse %s run: seed %d, commit %s, logs in %s", p.name, runSeed, commit, logDir)
	setting := func(q Quotas) string { return repo.Env("MCP_ABUSE_QUOTAS", q.Setting()) }

	ctx, cancel := context.WithTimeout(context.Background(), p.load+5*time.Minute)
	defer cancel()
	began := time.Now()

	ddbLog, err := os.Create(filepath.Join(logDir, "dynamodb.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer ddbLog.Close()
	ddb, err := dynamolocal.StartWith(ctx, dynamolocal.Options{SharedDB: true, Output: ddbLog})
	if err != nil {
		t.Fatal(err)
	}
	defer ddb.Stop()
	const lambdaTable, localTable = "abuse-lambda", "abuse-local"
	for _, name := range []string{lambdaTable, localTable} {
		if err := dynamolocal.CreateTable(ctx, ddb.Client(), name); err != nil {
			t.Fatalf("creating the table %s: %v", name, err)
		}
	}

	lambda := NewTarget(0, "lambda", "")
	lambda.Lambda, lambda.Table, lambda.Exact, lambda.Listener = true, true, true, "i*"
	local := NewTarget(1, "local", "")
	local.Table, local.Listener = true, "local"
	memory := NewTarget(2, "local-memory", "")
	memory.Share = memoryShare
	for _, tg := range []*Target{lambda, local} {
		tg.Quotas, tg.Breaker = tableQuotas, breaker
	}
	memory.Quotas, memory.Breaker = memoryQuotas, breaker

	// The hostile's note book's reads, while it hangs up: on the fleet
	// only its own (its principal is its own); locally every caller is
	// anonymous and shares one note book, so every read.
	proxy := NewProxy(ddb.Endpoint,
		Delay{Listener: "i*", Op: "Query", Contains: notesPK("authorizer:mallory"), When: lambda.Slow.Load, For: slowRead},
		Delay{Listener: "local", Op: "Query", When: local.Slow.Load, For: slowRead})
	defer proxy.Close()

	stateKey := make([]byte, 32)
	rand.Read(stateKey)
	env := samlocal.SAMDefaults("McpFunction")
	for k, v := range map[string]string{
		"MCP_CLAIMS_TABLE": lambdaTable, "MCP_ALLOW_ANONYMOUS": "true", "LOG_LEVEL": "info",
		"MCP_QUOTAS": setting(lambda.Quotas), "MCP_CIRCUIT_BREAKER": lambda.Breaker,
		// One sealing key for the fleet, without KMS: no call here seals
		// state, and the run is about quotas.
		"MCP_STATE_KEY": base64.StdEncoding.EncodeToString(stateKey),
		// As the chaos run configures the fleet (docs/chaos.md).
		"AWS_LAMBDA_FUNCTION_TIMEOUT": "30", "MCP_REQUEST_TIMEOUT": "28s", "MCP_STREAM_EVENTS": "function-url",
	} {
		env[k] = v
	}
	fleet, err := StartFleet(ctx, FleetOptions{RIE: rieBin, Bootstrap: bootstrap, Env: env, Proxy: proxy, Warm: p.warm, Max: p.max, LogDir: logDir})
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	lambda.URL, lambda.Logs = fleet.URL, fleet.Logs

	localDDB, err := proxy.Listen("local", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := samlocal.SAMDefaults("fixture")
	delete(base, "AWS_LAMBDA_FUNCTION_NAME") // not in Lambda
	l1env := map[string]string{"MCP_CLAIMS_TABLE": localTable, "AWS_ENDPOINT_URL_DYNAMODB": "http://" + localDDB, "LOG_LEVEL": "info",
		"MCP_QUOTAS": setting(local.Quotas), "MCP_CIRCUIT_BREAKER": local.Breaker}
	for k, v := range base {
		l1env[k] = v
	}
	l1, err := StartLocal(ctx, localBin, l1env, filepath.Join(logDir, "local.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer l1.Stop()
	local.URL, local.Logs = l1.URL, func() []string { return []string{l1.Log} }
	l2, err := StartLocal(ctx, localBin, map[string]string{"LOG_LEVEL": "info", "MCP_QUOTAS": setting(memory.Quotas), "MCP_CIRCUIT_BREAKER": memory.Breaker},
		filepath.Join(logDir, "local-memory.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Stop()
	memory.URL, memory.Logs = l2.URL, func() []string { return []string{l2.Log} }

	// The callers. Honest ones from addresses of their own; the hostile
	// one from its own, forging an honest caller's in X-Forwarded-For.
	roles := map[*Actor]Role{}
	for i := range 3 {
		lambda.Honest(fmt.Sprintf("h%d", i+1), fmt.Sprintf("honest-%d", i+1), fmt.Sprintf(honestAddr, i+2))
	}
	for i := range 2 {
		lambda.Honest(fmt.Sprintf("anon-%d", i+1), "", fmt.Sprintf(honestAddr, i+12))
	}
	roles[lambda.Hostile("mallory", "mallory", hostileAddr, "")] = Windows
	roles[lambda.Hostile("anon-mallory", "", hostileAddr, fmt.Sprintf(honestAddr, 12))] = Flood
	for _, tg := range []*Target{local, memory} {
		for i := range 3 {
			tg.Honest(fmt.Sprintf("h%d", i+1), "", fmt.Sprintf(honestAddr, i+2))
		}
	}
	roles[local.Hostile("mallory", "", hostileAddr, fmt.Sprintf(honestAddr, 2))] = Windows
	roles[memory.Hostile("mallory", "", hostileAddr, fmt.Sprintf(honestAddr, 2))] = Fill

	rec := NewRecorder(uint32(runSeed))
	targets := []*Target{lambda, local, memory}
	load := &Load{Rec: rec, Targets: targets, Duration: p.load, Seed: runSeed, Roles: roles}
	loadStart := time.Now()
	load.Run(ctx)
	load.Settle(ctx, 30*time.Second)
	settled := time.Now()
	total := time.Since(loadStart)

	ops := proxy.Ops()
	if err := WriteOps(filepath.Join(logDir, "dynamodb-ops.jsonl"), ops); err != nil {
		t.Error(err)
	}
	var figs []*Figures
	for _, tg := range targets {
		lines, err := ReadLines(tg.Logs())
		if err != nil {
			t.Fatal(err)
		}
		in := Input{Target: tg, Lines: lines, Tasks: map[*Actor][]*TaskRun{}, Roles: roles, Settled: settled}
		for _, e := range rec.Exchanges() {
			if e.Actor.target == tg {
				in.Exchanges = append(in.Exchanges, e)
			}
		}
		for _, op := range ops {
			if Listens(tg.Listener, op.Listener) {
				in.Ops = append(in.Ops, op)
			}
		}
		for a, ts := range load.Tasks() {
			if a.target == tg {
				in.Tasks[a] = ts
			}
		}
		figs = append(figs, Check(in))
	}
	started, busy := fleet.Size()
	sum := Summary{Title: fmt.Sprintf("abuse %s run at %s, seed %d, %s from start to checks, %s",
		p.name, commit, runSeed, time.Since(began).Round(time.Second), time.Now().UTC().Format("2006-01-02")),
		Load: p.load, Total: total, Instances: started, Busy: busy}
	var report, details bytes.Buffer
	WriteReport(&report, sum, figs)
	WriteViolations(&details, figs, 1<<30)
	_ = os.WriteFile(filepath.Join(logDir, "report.txt"), append(report.Bytes(), details.Bytes()...), 0o644)
	fmt.Fprint(os.Stdout, report.String())
	var some bytes.Buffer
	WriteViolations(&some, figs, 15)
	fmt.Fprint(os.Stdout, some.String())

	for _, err := range fleet.Errors() {
		t.Errorf("the harness failed: %v", err)
	}
	for _, f := range figs {
		for _, th := range f.Thin {
			t.Errorf("the run did too little (%s): %s", f.Target.Name, th)
		}
		counts := map[string]int{}
		for _, v := range f.Violations {
			counts[v.Check]++
		}
		for _, c := range Checks {
			if counts[c] > 0 {
				t.Errorf("%s: %d violations of %s", f.Target.Name, counts[c], c)
			}
		}
	}
	if t.Failed() {
		t.Logf("every violation with its log lines: %s", filepath.Join(logDir, "report.txt"))
	}
}

// notesPK is the note book's partition key of a principal
// (notebook/notes_table.go).
func notesPK(principal string) string {
	d := sha256.Sum256([]byte(principal))
	return "notes#" + hex.EncodeToString(d[:])
}
