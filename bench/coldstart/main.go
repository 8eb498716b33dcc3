// Command coldstart measures each implementation as a Lambda function
// under the AWS Lambda Runtime Interface Emulator (aws-lambda-rie) on
// loopback: binary sizes, cold start and warm latency.
//
// Every subject is built as Lambda builds a Go function (GOOS=linux
// CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags='-s -w'),
// for amd64 (run here) and arm64 (sizes only):
//
//	bare     bench/cmd/bare: aws-lambda-go answering a fixed response
//	ours     bench/cmd/ours: the bench server on pkg/apigw.Handler
//	bare-jsonschema, bare-jsonv2
//	         bench/cmd/bare built with a tag that links, unused, one
//	         library: google/jsonschema-go (pkg/toolschema's engine) or
//	         go-json-experiment/json (the core's decoder)
//	bare-sdk bench/cmd/bare making the DynamoDB, KMS and Lambda clients at
//	         start, as most Go functions do: what the product must stay
//	         below (it makes them on first use)
//	product  functions/fixture, built in the main module: the production
//	         composition serving the note book, as the deployed demo does
//	gosdk    bench/cmd/gosdk: go-sdk behind bench/impl/lambdahttp
//	mcpgo    bench/cmd/mcpgo: mcp-go behind bench/impl/lambdahttp
//
// The emulator launches the bootstrap on the first invocation, not when it
// starts (its Init runs in the first invoke's handler), so a cold start is
// measured from starting aws-lambda-rie to the first answered invocation:
// a tools/call of echo (for the product, which has no echo, a read-only
// tools/call of notes_search with arguments {}). Fresh processes are
// started in rounds, one of each subject per round in an order drawn anew
// each round, so that drift in the machine's load spreads evenly. Warm
// latency is the round trip of sequential invocations in one process
// after its cold one. Every answer is checked with the bench package's
// checks before it counts.
//
// Run from the bench module (go run ./report runs it too):
//
//	go run ./coldstart [-cold 300] [-warm 200] [-json out.json]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/serverless-mcp/mcp-lambda/bench"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
)

// Subject is one function under test.
type Subject struct {
	Name string
	// Dir is the module directory the build runs in; Pkg the package.
	Dir, Pkg string
	// Tag is a build tag added to lambda.norpc, if any.
	Tag string
	// Env is added to the emulator's (and so the function's) environment.
	Env []string
	// Case is the invocation sent; Note says why, when it is not echo.
	Case *bench.Case `json:"-"`
	Note string
	// Doors, if set, also times the case's request warm as each of the
	// function's doors delivers it (the HTTP API's payload 2.0, the REST
	// API's 1.0, a function URL's), made by cmd/mcp-event.
	Doors bool
}

// Stats summarises samples in milliseconds.
type Stats struct {
	N                int
	Median, Min, Max float64
	P90              float64 `json:",omitempty"`
	P99              float64 `json:",omitempty"`
}

// Result is what one subject measured.
type Result struct {
	Name, Package, Request, Note string
	// Size is the bootstrap's size in bytes, by GOARCH.
	Size map[string]int64
	// Cold is from starting the emulator to the first answer; Ready the
	// part until the emulator listens (rie.Start); First the rest: the
	// bootstrap's exec and init and the first invocation; Init the
	// emulator's own INIT REPORT (exec to the runtime's first /next).
	Cold, Ready, First, Init Stats
	// ColdOverBare, FirstOverBare and InitOverBare are the paired
	// differences: in each round, this subject's figure less bare's of the
	// same round. Their median is what the subject adds over bare, with
	// the machine's drift between rounds cancelled. Empty for bare.
	ColdOverBare, FirstOverBare, InitOverBare Stats `json:",omitzero"`
	// Warm is the round trip of one warm invocation through the
	// emulator; WarmFunc the emulator's INVOKE RTDONE duration of it
	// (invocation handed over to response posted).
	Warm, WarmFunc Stats
	// Doors are the warm invocations by door (Subject.Doors).
	Doors []DoorResult `json:",omitempty"`
}

// DoorResult is one door's warm invocations of a subject.
type DoorResult struct {
	Door           string
	Warm, WarmFunc Stats
}

// The doors a function serves, as cmd/mcp-event names them.
var doors = []string{"http-api", "rest", "function-url"}

// Report is the program's JSON output.
type Report struct {
	GoVersion, GOOS, GOARCH, RIE string
	// RIEVersion is the emulator's module version, from its build info.
	RIEVersion         string
	BuildFlags         string
	ColdRuns, WarmRuns int
	Results            []*Result
}

const buildFlags = "-tags lambda.norpc -trimpath -ldflags='-s -w'"

func main() {
	riePath := flag.String("rie", "", "path of aws-lambda-rie (default: the main module's .tools/bin/aws-lambda-rie)")
	cold := flag.Int("cold", 300, "fresh processes per subject")
	warm := flag.Int("warm", 200, "warm invocations per subject, in one process")
	jsonOut := flag.String("json", "", "also write the results as JSON to this file")
	arches := flag.String("arch", "amd64,arm64", "GOARCHes to build for sizes (the host's is also run)")
	only := flag.String("only", "", "comma-separated subjects (default: all)")
	timeout := flag.Duration("timeout", 4*time.Minute, "give up after this long")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("coldstart: ")
	if *cold < 1 || *warm < 1 {
		log.Fatal("-cold and -warm must be at least 1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rep, err := run(ctx, *riePath, *cold, *warm, strings.Split(*arches, ","), *only)
	if err != nil {
		log.Fatal(err)
	}
	printTable(os.Stdout, rep)
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// moduleDir returns the directory of module path ("" for the current one),
// as go list resolves it (the main module through bench's replace).
func moduleDir(path string) (string, error) {
	args := []string{"list", "-m", "-f", "{{.Dir}}"}
	if path != "" {
		args = append(args, path)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %v (run from the bench module)", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

func run(ctx context.Context, riePath string, cold, warm int, arches []string, only string) (*Report, error) {
	benchDir, err := moduleDir("")
	if err != nil {
		return nil, err
	}
	mainDir, err := moduleDir("github.com/serverless-mcp/mcp-lambda")
	if err != nil {
		return nil, err
	}
	if riePath == "" {
		riePath = filepath.Join(mainDir, ".tools", "bin", "aws-lambda-rie")
	}
	if _, err := os.Stat(riePath); err != nil {
		return nil, fmt.Errorf("%v: install it with `make tools` in %s", err, mainDir)
	}
	subjects := []*Subject{
		{Name: "bare", Dir: benchDir, Pkg: "./cmd/bare", Case: bench.ToolsCallEcho,
			Note: "answers a fixed 200 response without reading the request"},
		{Name: "ours", Dir: benchDir, Pkg: "./cmd/ours", Case: bench.ToolsCallEcho},
		{Name: "bare-jsonschema", Dir: benchDir, Pkg: "./cmd/bare", Tag: "bench_link_jsonschema", Case: bench.ToolsCallEcho,
			Note: "bare linking google/jsonschema-go, unused: its package init alone"},
		{Name: "bare-jsonv2", Dir: benchDir, Pkg: "./cmd/bare", Tag: "bench_link_jsonv2", Case: bench.ToolsCallEcho,
			Note: "bare linking go-json-experiment/json, unused: its package init alone"},
		{Name: "bare-sdk", Dir: benchDir, Pkg: "./cmd/bare", Tag: "bench_eager_sdk", Case: bench.ToolsCallEcho,
			Env:  []string{"AWS_REGION=us-east-1"},
			Note: "bare making the DynamoDB, KMS and Lambda clients at start, as most Go functions do: the product's gate"},
		{Name: "product", Dir: mainDir, Pkg: "./functions/fixture", Case: bench.ProductSearch,
			// A KMS key is configured so that the KMS sealer is built as in
			// the deployed template; no claims table, so that notes are in
			// memory and no request needs the network. Neither AWS client
			// is created: the request reaches neither.
			Env:   []string{"MCP_STATE_KMS_KEY=alias/bench-never-called", "MCP_ALLOW_ANONYMOUS=true"},
			Note:  "no echo tool: tools/call notes_search {} (read-only); AWS clients linked, created lazily, never here",
			Doors: true},
		{Name: "gosdk", Dir: benchDir, Pkg: "./cmd/gosdk", Case: bench.ToolsCallEcho},
		{Name: "mcpgo", Dir: benchDir, Pkg: "./cmd/mcpgo", Case: bench.ToolsCallEcho},
	}
	if only != "" {
		subjects = slices.DeleteFunc(subjects, func(s *Subject) bool { return !slices.Contains(strings.Split(only, ","), s.Name) })
	}
	work, err := os.MkdirTemp("", "coldstart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	rep := &Report{GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, RIE: riePath,
		RIEVersion: moduleVersion(riePath), BuildFlags: buildFlags, ColdRuns: cold, WarmRuns: warm}
	if !slices.Contains(arches, runtime.GOARCH) {
		arches = append(arches, runtime.GOARCH)
	}
	bins := map[string]string{}
	for _, s := range subjects {
		r := &Result{Name: s.Name, Package: s.Pkg, Request: s.Case.Name, Note: s.Note, Size: map[string]int64{}}
		if s.Dir == mainDir {
			r.Package = "github.com/serverless-mcp/mcp-lambda/functions/fixture"
		}
		rep.Results = append(rep.Results, r)
		for _, arch := range arches {
			out := filepath.Join(work, s.Name+"-"+arch, "bootstrap")
			fmt.Fprintf(os.Stderr, "coldstart: building %s for linux/%s\n", s.Name, arch)
			if err := build(ctx, s.Dir, s.Pkg, s.Tag, arch, out); err != nil {
				return nil, err
			}
			fi, err := os.Stat(out)
			if err != nil {
				return nil, err
			}
			r.Size[arch] = fi.Size()
			if arch == runtime.GOARCH {
				bins[s.Name] = out
			}
		}
	}

	// One unmeasured round first, so that the emulator is in the page
	// cache and every subject has run once (each start reloads its
	// bootstrap: see reload).
	for _, s := range subjects {
		if _, err := coldOnce(ctx, riePath, s, bins[s.Name]); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	fmt.Fprintf(os.Stderr, "coldstart: %d cold starts of each of %d subjects\n", cold, len(subjects))
	samples := make([]coldSample, 0, cold*len(subjects))
	// Each round takes the subjects in an order of its own, drawn from a
	// fixed seed (the same every run): a rotation would have each subject
	// follow the same neighbour in almost every round, and what a start
	// leaves behind (its caches, the emulator's state) would then weigh on
	// one subject more than on the others.
	order := rand.New(rand.NewPCG(1, 2))
	for range cold {
		for _, j := range order.Perm(len(subjects)) {
			s := subjects[j]
			cs, err := coldOnce(ctx, riePath, s, bins[s.Name])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.Name, err)
			}
			samples = append(samples, cs)
		}
	}
	for k, s := range subjects {
		r := rep.Results[k]
		var c, rd, f, in []float64
		for _, cs := range samples {
			if cs.subject == s {
				c, rd, f, in = append(c, ms(cs.cold)), append(rd, ms(cs.ready)), append(f, ms(cs.first)), append(in, cs.init)
			}
		}
		r.Cold, r.Ready, r.First, r.Init = stats(c), stats(rd), stats(f), stats(in)
		if s.Name != "bare" {
			r.ColdOverBare, r.FirstOverBare, r.InitOverBare = overBare(samples, len(subjects), s)
		}
		fmt.Fprintf(os.Stderr, "coldstart: %d warm invocations of %s\n", warm, s.Name)
		w, wf, err := warmRun(ctx, riePath, s, bins[s.Name], warm)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		r.Warm, r.WarmFunc = stats(w), stats(wf)
		if !s.Doors {
			continue
		}
		for _, door := range doors {
			ev, err := doorEvent(ctx, mainDir, s.Case, door)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.Name, err)
			}
			fmt.Fprintf(os.Stderr, "coldstart: %d warm invocations of %s through the %s door\n", warm, s.Name, door)
			ds := *s
			ds.Case = s.Case.WithEvent(ev)
			w, wf, err := warmRun(ctx, riePath, &ds, bins[s.Name], warm)
			if err != nil {
				return nil, fmt.Errorf("%s, %s door: %w", s.Name, door, err)
			}
			r.Doors = append(r.Doors, DoorResult{Door: door, Warm: stats(w), WarmFunc: stats(wf)})
		}
	}
	return rep, nil
}

// doorEvent is c's request as door delivers it, printed by the main
// module's cmd/mcp-event (the command `make event` runs).
func doorEvent(ctx context.Context, mainDir string, c *bench.Case, door string) ([]byte, error) {
	args, err := json.Marshal(c.Arguments)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./cmd/mcp-event", "-door", door, "-method", c.Method, "-tool", c.Tool, "-args", string(args))
	cmd.Dir = mainDir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("making the %s event: %w", door, err)
	}
	return out, nil
}

// moduleVersion returns the main module's version in a Go binary's build
// info, or "".
func moduleVersion(bin string) string {
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "mod" {
			return f[1] + " " + f[2]
		}
	}
	return ""
}

// build builds pkg in dir as Lambda builds a Go function.
func build(ctx context.Context, dir, pkg, tag, goarch, out string) error {
	tags := "lambda.norpc"
	if tag != "" {
		tags += "," + tag
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", tags, "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s for %s: %v\n%s", pkg, goarch, err, b)
	}
	return nil
}

type coldSample struct {
	subject            *Subject
	cold, ready, first time.Duration
	init               float64 // ms, from the emulator's log
}

// overBare returns s's paired differences over bare: samples holds whole
// rounds of n, one sample of each subject per round.
func overBare(samples []coldSample, n int, s *Subject) (cold, first, init Stats) {
	var c, f, in []float64
	for round := range slices.Chunk(samples, n) {
		var mine, bare *coldSample
		for k := range round {
			switch round[k].subject.Name {
			case s.Name:
				mine = &round[k]
			case "bare":
				bare = &round[k]
			}
		}
		if mine == nil || bare == nil {
			continue
		}
		c = append(c, ms(mine.cold)-ms(bare.cold))
		f = append(f, ms(mine.first)-ms(bare.first))
		in = append(in, mine.init-bare.init)
	}
	return stats(c), stats(f), stats(in)
}

// coldOnce starts a fresh emulator with the bootstrap, invokes it once,
// checks the answer and stops the emulator.
func coldOnce(ctx context.Context, riePath string, s *Subject, bin string) (coldSample, error) {
	cs := coldSample{subject: s}
	if err := reload(bin); err != nil {
		return cs, err
	}
	t0 := time.Now()
	e, err := rie.Start(ctx, rie.Options{RIE: riePath, Bootstrap: bin, Env: s.Env})
	if err != nil {
		return cs, err
	}
	defer e.Stop()
	t1 := time.Now()
	out, err := e.Invoke(ctx, s.Case.Event)
	t2 := time.Now()
	if err != nil {
		return cs, fmt.Errorf("%w\n%s", err, e.Log())
	}
	if err := check(s, out); err != nil {
		return cs, fmt.Errorf("wrong cold answer: %w\n%s", err, e.Log())
	}
	cs.cold, cs.ready, cs.first = t2.Sub(t0), t1.Sub(t0), t2.Sub(t1)
	inits, err := logged(e, initRE, 1)
	if err != nil {
		return cs, err
	}
	cs.init = inits[0]
	return cs, nil
}

// warmRun starts one emulator, invokes it once cold, then n times warm,
// timing each warm round trip and checking every answer.
func warmRun(ctx context.Context, riePath string, s *Subject, bin string, n int) (rt, fn []float64, err error) {
	e, err := rie.Start(ctx, rie.Options{RIE: riePath, Bootstrap: bin, Env: s.Env})
	if err != nil {
		return nil, nil, err
	}
	defer e.Stop()
	if _, err := e.Invoke(ctx, s.Case.Event); err != nil {
		return nil, nil, err
	}
	outs := make([][]byte, n)
	rt = make([]float64, n)
	for i := range n {
		t0 := time.Now()
		out, err := e.Invoke(ctx, s.Case.Event)
		rt[i] = ms(time.Since(t0))
		if err != nil {
			return nil, nil, err
		}
		outs[i] = out
	}
	for i, out := range outs {
		if err := check(s, out); err != nil {
			return nil, nil, fmt.Errorf("wrong warm answer %d: %w", i, err)
		}
	}
	fn, err = logged(e, doneRE, n+1)
	if err != nil {
		return nil, nil, err
	}
	return rt, fn[1:], nil
}

// check verifies a response payload: the case's own check, or for bare a
// 200.
func check(s *Subject, out []byte) error {
	a, err := bench.DecodeLambda(out)
	if err != nil {
		return err
	}
	if s.Pkg == "./cmd/bare" { // answers a fixed response: only its status is checked
		if a.Status != 200 {
			return fmt.Errorf("status %d", a.Status)
		}
		return nil
	}
	return s.Case.Check(a)
}

// The emulator's log lines for the function's init and each invocation.
var (
	initRE = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)
	doneRE = regexp.MustCompile(`INVOKE RTDONE\(status: success, produced bytes: \d+, duration: ([0-9.]+)ms\)`)
)

// logged waits (briefly: the emulator logs as it goes) for n matches of re
// in the emulator's log and returns their values.
func logged(e *rie.Emulator, re *regexp.Regexp, n int) ([]float64, error) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		ms := re.FindAllStringSubmatch(e.Log(), -1)
		if len(ms) >= n {
			v := make([]float64, len(ms))
			for i, m := range ms {
				f, err := strconv.ParseFloat(m[1], 64)
				if err != nil {
					return nil, err
				}
				v[i] = f
			}
			return v, nil
		}
		if time.Now().After(deadline) {
			return nil, errors.New("the emulator did not log " + re.String() + " in time:\n" + e.Log())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// stats summarises v.
func stats(v []float64) Stats {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	st := Stats{N: n, Min: s[0], Max: s[n-1], Median: s[n/2]}
	if n%2 == 0 {
		st.Median = (s[n/2-1] + s[n/2]) / 2
	}
	if n >= 20 {
		st.P90 = s[(n*9)/10]
	}
	if n >= 100 {
		st.P99 = s[(n*99)/100]
	}
	return st
}

func printTable(w io.Writer, rep *Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "subject\tamd64 bytes\tarm64 bytes\tcold ms (median)\tmin\tmax\tfirst invoke ms\temulator init ms\twarm ms (median)\tmin\tmax\tin-function ms\t\n")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", r.Name, r.Size["amd64"], r.Size["arm64"],
			r.Cold.Median, r.Cold.Min, r.Cold.Max, r.First.Median, r.Init.Median,
			r.Warm.Median, r.Warm.Min, r.Warm.Max, r.WarmFunc.Median)
	}
	tw.Flush()
}
