//go:build integration

package soak

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/repo"

	"github.com/serverless-mcp/mcp-lambda/e2e/chaos"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/loopback"
)

// target is one process under measurement: the local HTTP server or the
// function under the emulator, soaked or serving only the warm-up.
type target struct {
	name   string
	client *chaos.Client
	header map[string]string // the pin of an emulator slot
	pid    func() (int, error)
	// dump returns what the process wrote to standard error, where a
	// SIGQUIT dump goes.
	dump func() ([]byte, error)

	mu      sync.Mutex
	samples []Sample
	lat     []time.Duration
	ok      int
	errs    []string
	notes   []string // note ids, oldest first
}

// TestSoak puts a moderate, steady load (a few requests a second over
// every tool, resource and prompt, the note book kept at a steady size)
// on the function as a local HTTP server (no configuration, as make run)
// and as the bootstrap under the runtime emulator against DynamoDB Local
// and local-kms, for SOAK_DURATION (default 10m), and beside each an
// instance of the same kind that serves only the warm-up. After the
// warm-up it samples every process's resident memory every 5 s, and at
// the end counts each one's goroutines in its SIGQUIT dump. It reports
// the memory slope and the goroutines, and fails on any failed request
// and on goroutines that grew with the load (docs/soak.md).
func TestSoak(t *testing.T) {
	total := 10 * time.Minute
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 20*time.Second {
			t.Fatalf("SOAK_DURATION=%q: want a Go duration of at least 20s", v)
		}
		total = d
	}
	warm := min(time.Minute, total/5)
	rate := 4.0 // requests per second on each soaked process
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
	logDir := t.TempDir()
	if d := os.Getenv("MCP_SOAK_LOGDIR"); d != "" {
		logDir = filepath.Join(d, time.Now().UTC().Format("20060102T150405Z"))
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	local := localBinary(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), total+5*time.Minute)
	defer cancel()

	var targets []*target
	for _, name := range []string{"local, soaked", "local, warm-up only"} {
		tg, stop := startLocal(ctx, t, local, logDir, name)
		defer stop()
		targets = append(targets, tg)
	}
	c, err := chaos.StartCluster(ctx, chaos.ClusterOptions{
		RIE: rieBin, Bootstrap: bootstrap,
		EnvFile: filepath.Join(root, "deploy/sam-local-env.json"), Seed: filepath.Join(root, "deploy/local-kms-seed.yaml"),
		Instances: 2, Dir: filepath.Join(t.TempDir(), "data"), LogDir: logDir, RandSeed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for slot, name := range []string{"emulator, soaked", "emulator, warm-up only"} {
		targets = append(targets, emulatorTarget(c, logDir, slot, name))
	}
	soaked := []*target{targets[0], targets[2]}

	commit := repo.Describe(root)
	t.Logf("soak at %s: %s (warm-up %s), %.0f requests/s per soaked process, logs in %s", commit, total, warm, rate, logDir)
	began := time.Now()
	// The warm-up loads every process alike; then only the soaked ones.
	runLoad(ctx, targets, warm, rate, 1)
	sampled := make(chan struct{})
	sampleCtx, stopSampling := context.WithCancel(ctx)
	go func() {
		defer close(sampled)
		sample(sampleCtx, t, targets, 5*time.Second)
	}()
	runLoad(ctx, soaked, total-warm, rate, 2)
	stopSampling()
	<-sampled
	loadTime := time.Since(began)

	// Idle connections closed, so that the local servers' connection
	// goroutines do not count; then every process dumps its goroutines.
	for _, tg := range targets {
		tg.client.HTTP.CloseIdleConnections()
	}
	time.Sleep(2 * time.Second)
	gor := map[*target]int{}
	for _, tg := range targets {
		n, err := quit(tg)
		if err != nil {
			t.Errorf("%s: %v", tg.name, err)
			continue
		}
		gor[tg] = n
	}

	var report bytes.Buffer
	fmt.Fprintf(&report, "soak at %s: %s of load (%s warm-up), %.0f requests/s per soaked process, RSS sampled every 5s after the warm-up\n",
		commit, loadTime.Round(time.Second), warm, rate)
	tw := tabwriter.NewWriter(&report, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| process\t| requests (failed)\t| p50 / p99\t| RSS first / last sample (KiB)\t| RSS slope (KiB/min)\t| samples\t| goroutines at the end\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|---\t|---\t|")
	for _, tg := range targets {
		tg.mu.Lock()
		lat := slices.Clone(tg.lat)
		slices.Sort(lat)
		first, last := int64(0), int64(0)
		if len(tg.samples) > 0 {
			first, last = tg.samples[0].KiB, tg.samples[len(tg.samples)-1].KiB
		}
		slope, ok := Slope(tg.samples)
		slopeText := "n/a"
		if ok {
			slopeText = fmt.Sprintf("%+.1f", slope)
		}
		fmt.Fprintf(tw, "| %s\t| %d (%d)\t| %s / %s\t| %d / %d\t| %s\t| %d\t| %d\t|\n", tg.name, tg.ok+len(tg.errs), len(tg.errs),
			pct(lat, 0.5), pct(lat, 0.99), first, last, slopeText, len(tg.samples), gor[tg])
		tg.mu.Unlock()
	}
	tw.Flush()
	fmt.Fprint(os.Stdout, report.String())
	_ = os.WriteFile(filepath.Join(logDir, "report.txt"), report.Bytes(), 0o644)

	for _, tg := range targets {
		if len(tg.errs) > 0 {
			t.Errorf("%s: %d requests failed, the first: %s", tg.name, len(tg.errs), strings.Join(tg.errs[:min(5, len(tg.errs))], "; "))
		}
		if tg.ok == 0 {
			t.Errorf("%s served nothing", tg.name)
		}
	}
	// Goroutines that grow with the load are a leak: the soaked process
	// may hold no more than the one that served only the warm-up, give
	// or take a few the runtime starts and stops by itself.
	const slack = 8
	for i := 0; i+1 < len(targets); i += 2 {
		s, ref := targets[i], targets[i+1]
		if gor[s] > gor[ref]+slack {
			t.Errorf("%s has %d goroutines, %s %d: they grew with the load", s.name, gor[s], ref.name, gor[ref])
		}
	}
}

// startLocal runs the function as make run does: a local HTTP server
// with no configuration but its address.
func startLocal(ctx context.Context, t *testing.T, bin, logDir, name string) (*target, func()) {
	t.Helper()
	port, err := loopback.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	base := strings.ReplaceAll(strings.ReplaceAll(name, ",", ""), " ", "-")
	out, err := os.Create(filepath.Join(logDir, base+".log"))
	if err != nil {
		t.Fatal(err)
	}
	errPath := filepath.Join(logDir, base+".stderr")
	errFile, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	// Nothing from this environment: no AWS endpoint, no Lambda variable.
	cmd.Env = []string{"MCP_ADDR=" + loopback.Addr(port)}
	cmd.Stdout, cmd.Stderr = out, errFile
	proc, err := loopback.Start(ctx, cmd, loopback.Addr(port), 30*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	tg := &target{name: name, client: newClient("http://" + loopback.Addr(port) + "/mcp"),
		pid:  func() (int, error) { return proc.Pid(), nil },
		dump: func() ([]byte, error) { return os.ReadFile(errPath) }}
	return tg, func() {
		proc.Stop()
		out.Close()
		errFile.Close()
	}
}

// emulatorTarget is the function in one slot of the cluster: the
// emulator's child process.
func emulatorTarget(c *chaos.Cluster, logDir string, slot int, name string) *target {
	return &target{name: name, client: newClient(c.Front), header: map[string]string{chaos.HeaderPin: strconv.Itoa(slot)},
		pid: func() (int, error) { return OnlyChild(c.Emulator(slot).Pid()) },
		dump: func() ([]byte, error) {
			// The emulator relays the function's standard error into the
			// slot's log (no fault replaces the instance: generation 0).
			return os.ReadFile(filepath.Join(logDir, fmt.Sprintf("i%d.g0.log", slot)))
		}}
}

func newClient(url string) *chaos.Client {
	return &chaos.Client{URL: url, HTTP: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
}

// runLoad sends rate requests a second to each target for d, each
// request one of the operations below, at most 4 at a time per target.
func runLoad(ctx context.Context, targets []*target, d time.Duration, rate float64, seed uint64) {
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for i, tg := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			sem := make(chan struct{}, 4)
			tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
			defer tick.Stop()
			var ops sync.WaitGroup
			for time.Now().Before(end) && ctx.Err() == nil {
				<-tick.C
				sem <- struct{}{}
				op := rng.Float64()
				ops.Add(1)
				go func() {
					defer ops.Done()
					defer func() { <-sem }()
					tg.operate(ctx, op)
				}()
			}
			ops.Wait()
		}()
	}
	wg.Wait()
}

// operate sends one operation: reads of every kind, adds (half of them
// keyed), and confirmed deletes that keep the note book near 60 notes.
func (tg *target) operate(ctx context.Context, op float64) {
	tg.mu.Lock()
	n := len(tg.notes)
	tg.mu.Unlock()
	switch {
	case op < 0.12:
		tg.expect(ctx, chaos.Call{Method: "tools/list"}, nil)
	case op < 0.30:
		tg.expect(ctx, chaos.Call{Method: "tools/call", Name: "notes_search", Params: map[string]any{"name": "notes_search", "arguments": map[string]any{"query": "soak"}}}, nil)
	case op < 0.40:
		tg.expect(ctx, chaos.Call{Method: "tools/call", Name: "notes_digest", Params: map[string]any{"name": "notes_digest", "arguments": map[string]any{}}}, nil)
	case op < 0.48:
		tg.expect(ctx, chaos.Call{Method: "resources/read", Name: "notes://readme", Params: map[string]any{"uri": "notes://readme"}}, nil)
	case op < 0.54:
		tg.expect(ctx, chaos.Call{Method: "prompts/get", Name: "summarize_notes", Params: map[string]any{"name": "summarize_notes", "arguments": map[string]any{"focus": "todo"}}}, nil)
	case op < 0.60:
		tg.expect(ctx, chaos.Call{Method: "completion/complete", Params: map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "summarize_notes"},
			"argument": map[string]any{"name": "focus", "value": "t"}}}, nil)
	case op < 0.85 && n < 60:
		params := map[string]any{"name": "notes_add", "arguments": map[string]any{"text": fmt.Sprintf("soak note %d", time.Now().UnixNano())}}
		if op < 0.72 {
			params["idempotencyKey"] = fmt.Sprintf("soak-%d-%f", time.Now().UnixNano(), op)
		}
		tg.expect(ctx, chaos.Call{Method: "tools/call", Name: "notes_add", Params: params}, func(a *chaos.Answer) string {
			id, _ := a.Structured()["id"].(string)
			if id == "" {
				return "no note id"
			}
			tg.mu.Lock()
			tg.notes = append(tg.notes, id)
			tg.mu.Unlock()
			return ""
		})
	default:
		tg.deleteOldest(ctx)
	}
}

// deleteOldest deletes the oldest note in two rounds: the confirmation,
// then the confirmed delete.
func (tg *target) deleteOldest(ctx context.Context) {
	tg.mu.Lock()
	if len(tg.notes) == 0 {
		tg.mu.Unlock()
		return
	}
	id := tg.notes[0]
	tg.notes = tg.notes[1:]
	tg.mu.Unlock()
	args := map[string]any{"id": id}
	var state string
	tg.expect(ctx, chaos.Call{Method: "tools/call", Name: "notes_delete", Elicitation: true, Params: map[string]any{"name": "notes_delete", "arguments": args}},
		func(a *chaos.Answer) string {
			state, _ = a.Result["requestState"].(string)
			if a.Result["resultType"] != "input_required" || state == "" {
				return "no confirmation asked"
			}
			return ""
		})
	if state == "" {
		return
	}
	tg.expect(ctx, chaos.Call{Method: "tools/call", Name: "notes_delete", Elicitation: true, Params: map[string]any{"name": "notes_delete", "arguments": args,
		"requestState": state, "inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}},
		func(a *chaos.Answer) string {
			if a.Structured()["deleted"] != true {
				return "not deleted"
			}
			return ""
		})
}

// expect sends c and records the answer: it must be a result (not a tool
// error), and check, if set, must find nothing wrong with it.
func (tg *target) expect(ctx context.Context, c chaos.Call, check func(*chaos.Answer) string) {
	c.Header = tg.header
	a := tg.client.Do(ctx, c)
	problem := ""
	if a.Classify() != chaos.OK {
		problem = a.Describe()
	} else if check != nil {
		problem = check(a)
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if a.Status != 0 {
		tg.lat = append(tg.lat, a.Latency)
	}
	if problem != "" {
		tg.errs = append(tg.errs, fmt.Sprintf("%s %s: %s", c.Method, c.Name, problem))
		return
	}
	tg.ok++
}

// sample records every target's resident memory every interval.
func sample(ctx context.Context, t *testing.T, targets []*target, every time.Duration) {
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		for _, tg := range targets {
			pid, err := tg.pid()
			if err == nil {
				var kb int64
				if kb, err = RSS(pid); err == nil {
					tg.mu.Lock()
					tg.samples = append(tg.samples, Sample{At: time.Since(start), KiB: kb})
					tg.mu.Unlock()
				}
			}
			if err != nil {
				t.Errorf("%s: sampling: %v", tg.name, err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// quit sends the process SIGQUIT, which makes a Go program print every
// goroutine's stack and exit, and counts the goroutines in that dump.
func quit(tg *target) (int, error) {
	pid, err := tg.pid()
	if err != nil {
		return 0, err
	}
	if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil {
		return 0, fmt.Errorf("SIGQUIT: %w", err)
	}
	// The dump is written before the process exits; wait for the exit.
	for range 100 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/status", pid)); err != nil {
			break
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(b), ") Z ") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	dump, err := tg.dump()
	if err != nil {
		return 0, err
	}
	if i := bytes.LastIndex(dump, []byte("SIGQUIT")); i >= 0 {
		dump = dump[i:]
	}
	return CountGoroutines(dump)
}

func pct(sorted []time.Duration, p float64) string {
	if len(sorted) == 0 {
		return "-"
	}
	i := max(0, min(int(float64(len(sorted))*p+0.5)-1, len(sorted)-1))
	return sorted[i].Round(100 * time.Microsecond).String()
}

// localBinary is the harnesses' function (functions/fixture) built as make run builds functions/mcp
// (MCP_SOAK_LOCAL_BIN when make has built it).
func localBinary(t *testing.T, root string) string {
	t.Helper()
	if p := os.Getenv("MCP_SOAK_LOCAL_BIN"); p != "" {
		return p
	}
	out := filepath.Join(t.TempDir(), "mcp")
	cmd := exec.Command("go", "build", "-o", out, "./functions/fixture")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the function: %v\n%s", err, b)
	}
	return out
}
