// Command report runs the bench module's measurements and writes
// docs/performance.md: the in-process benchmarks (median ns/op, B/op and
// allocs/op of every request and implementation, with the ratios
// peer/ours and ours/floor), the same requests as Lambda events, binary
// sizes, cold start and warm latency under the Lambda runtime emulator
// (../coldstart), live progress per front door (../firstevent), the
// DynamoDB requests of a keyed call whose only effect is enlisted writes
// (notebook's TestKeyedEnlistedRequests, against DynamoDB Local in a
// loopback-only network namespace), and the performance targets, each
// marked met or missed.
// `make bench` runs it.
//
// Run it from the bench module:
//
//	go run ./report                  # everything; writes ../docs/performance.md and prints it
//	go run ./report -raw out.txt     # also keep the raw go test output, for benchstat
//	go run ./report -in out.txt      # an earlier go test output, without running the benchmarks
//	go run ./report -nocold          # without the emulator (no sizes, cold start or warm latency)
//	go run ./report -noddb           # without counting a keyed enlisted call's DynamoDB requests (which needs root)
//	go run ./report -doc -           # print only, write no file
//
// Benchmarks that a finding skips (see bench.Findings) are shown as
// skipped, naming the finding.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/serverless-mcp/mcp-lambda/bench"
)

// The targets. The first two are gosdk/ours on tools/call; the rest are
// ours alone, or ours against the floor, mcp-go and the bare function.
const (
	targetTime     = 3.0 // gosdk/ours time, at least
	targetAllocs   = 5.0 // gosdk/ours allocs, at least
	targetFloor    = 1.6 // ours/floor time, at most
	targetMCPGo    = 6.0 // mcpgo/ours time, at least
	targetMaxAlloc = 45  // ours allocs/op in process, at most
	// tools/list, in process.
	targetListMCPGo = 10.0 // mcpgo/ours time, at least
	targetMaxBytes  = 7373 // ours B/op in process, at most (7.2 KB)
	targetQuota     = 1.10 // ours-quota/ours time, at most: the default quotas on their memory counters
	// On the Lambda event path (pkg/apigw).
	targetLambdaAlloc = 80  // ours allocs/op, at most
	targetLambdaMCPGo = 4.0 // mcpgo/ours time, at least
	// Cold start: the core's runtime init under the emulator over a bare
	// aws-lambda-go function's, at most (milliseconds, medians).
	targetInitOverBare = 0.5
)

func main() {
	count := flag.Int("count", 6, "rounds of go test -count=1, each implementation measured once a round")
	pattern := flag.String("bench", ".", "go test -bench")
	benchtime := flag.String("benchtime", "500ms", "go test -benchtime (\"\" for go test's default of 1s)")
	in := flag.String("in", "", "parse this saved go test output instead of running the benchmarks")
	raw := flag.String("raw", "", "write the raw go test output to this file")
	cold := flag.Int("cold", 300, "cold starts per subject (coldstart -cold): enough that a paired median is within about 0.15 ms")
	warm := flag.Int("warm", 200, "warm invocations per subject (coldstart -warm)")
	coldIn := flag.String("coldin", "", "read this saved coldstart -json output instead of running it")
	noCold := flag.Bool("nocold", false, "skip binary sizes, cold start and warm latency")
	noLive := flag.Bool("nolive", false, "skip live progress (firstevent)")
	liveIn := flag.String("livein", "", "read this saved firstevent -json output instead of running it")
	doc := flag.String("doc", "", "write the report here (default: docs/performance.md of the main module; - prints only)")
	noDDB := flag.Bool("noddb", false, "skip counting a keyed enlisted call's DynamoDB requests (notebook's TestKeyedEnlistedRequests)")
	ddbIn := flag.String("ddbin", "", "read this saved go test -v output of TestKeyedEnlistedRequests instead of running it")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("report: ")

	benchDir, err := moduleDir("")
	if err != nil {
		log.Fatal(err)
	}
	if *doc == "" {
		mainDir, err := moduleDir("github.com/serverless-mcp/mcp-lambda")
		if err != nil {
			log.Fatal(err)
		}
		*doc = filepath.Join(mainDir, "docs", "performance.md")
	}

	var out []byte
	args := testArgs(*pattern, *benchtime)
	if *in != "" {
		out, err = os.ReadFile(*in)
	} else {
		out, err = runTests(benchDir, args, *count)
	}
	if err != nil {
		log.Fatal(err)
	}
	if *raw != "" {
		if err := os.WriteFile(*raw, out, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	res, err := parse(bytes.NewReader(out))
	if err != nil {
		log.Fatal(err)
	}
	if len(res.samples) == 0 {
		log.Fatal("no benchmark results in the output")
	}

	var cs *coldReport
	coldArgs := []string{"run", "./coldstart", "-cold", strconv.Itoa(*cold), "-warm", strconv.Itoa(*warm)}
	switch {
	case *coldIn != "":
		cs = &coldReport{}
		err = readJSON(*coldIn, cs)
	case !*noCold:
		cs = &coldReport{}
		err = runJSON(benchDir, coldArgs, cs)
	}
	if err != nil {
		log.Fatal(err)
	}

	var live *liveReport
	liveArgs := []string{"run", "./firstevent"}
	switch {
	case *liveIn != "":
		live = &liveReport{}
		err = readJSON(*liveIn, live)
	case !*noLive:
		live = &liveReport{}
		err = runJSON(benchDir, liveArgs, live)
	}
	if err != nil {
		log.Fatal(err)
	}

	var enlisted *enlistedReport
	switch {
	case *ddbIn != "":
		enlisted = readEnlisted(*ddbIn)
	case !*noDDB:
		mainDir, err := moduleDir("github.com/serverless-mcp/mcp-lambda")
		if err != nil {
			log.Fatal(err)
		}
		enlisted = measureEnlisted(mainDir)
	}

	m := &meta{date: time.Now().UTC().Format("2006-01-02"), testCmd: shellCmd(args), enlisted: enlisted,
		coldCmd: shellCmd(coldArgs), liveCmd: shellCmd(liveArgs), cpus: runtime.NumCPU(), live: live}
	m.goVersion, m.goos, m.goarch = goEnv("GOVERSION"), goEnv("GOOS"), goEnv("GOARCH")
	m.peers = modVersions(benchDir, "github.com/modelcontextprotocol/go-sdk", "github.com/mark3labs/mcp-go", "github.com/aws/aws-lambda-go")

	var buf bytes.Buffer
	write(&buf, res, cs, m)
	os.Stdout.Write(buf.Bytes())
	if *doc != "-" {
		if err := os.WriteFile(*doc, buf.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "report: wrote %s\n", *doc)
	}
}

// moduleDir returns the directory of module path ("" for the current one,
// which must be the bench module).
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

// shellCmd returns go with args as one would type it in a shell.
func shellCmd(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if k, v, ok := strings.Cut(a, "="); ok && strings.ContainsAny(v, "^$*?") {
			q[i] = k + "='" + v + "'"
		}
	}
	return "go " + strings.Join(q, " ")
}

func goEnv(key string) string {
	out, _ := exec.Command("go", "env", key).Output()
	return strings.TrimSpace(string(out))
}

// modVersions returns "path version" of each module in the bench
// module's build list.
func modVersions(dir string, paths ...string) []string {
	cmd := exec.Command("go", append([]string{"list", "-m", "-f", "{{.Path}} {{.Version}}"}, paths...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func testArgs(pattern string, benchtime string) []string {
	args := []string{"test", "-run=^$", "-bench=" + pattern, "-benchmem", "-count=1"}
	if benchtime != "" {
		args = append(args, "-benchtime="+benchtime)
	}
	return args
}

// runTests runs the benchmarks rounds times in the bench module's
// directory, echoing the output to stderr as it comes, and returns it
// all. Each round measures every implementation once, one after the
// other (go test -count=1), rather than one implementation rounds times
// and then the next (-count=rounds): on a shared machine a slow minute
// then weighs on every implementation of a round alike, not on whichever
// was measured in it.
func runTests(dir string, args []string, rounds int) ([]byte, error) {
	var buf bytes.Buffer
	for i := range rounds {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Stdout = io.MultiWriter(&buf, os.Stderr)
		cmd.Stderr = os.Stderr
		fmt.Fprintf(os.Stderr, "round %d of %d: go %s in %s\n", i+1, rounds, strings.Join(args, " "), dir)
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go test: %v", err)
		}
	}
	return buf.Bytes(), nil
}

// coldReport mirrors the JSON that coldstart -json writes.
type coldReport struct {
	GoVersion, GOOS, GOARCH, RIE string
	RIEVersion, BuildFlags       string
	ColdRuns, WarmRuns           int
	Results                      []*coldResult
}

type coldResult struct {
	Name, Package, Request, Note string
	Size                         map[string]int64
	Cold, Ready, First, Init     stats
	Warm, WarmFunc               stats
	// Doors are the warm invocations by door (coldstart's Subject.Doors).
	Doors []struct {
		Door           string
		Warm, WarmFunc stats
	}
	// Paired differences over bare (see coldstart's Result); N is 0 in
	// output saved before they were measured.
	ColdOverBare, FirstOverBare, InitOverBare stats
}

// added is what a subject adds over bare by one figure: the median of its
// paired differences when they were measured, else the difference of the
// medians.
func added(paired stats, mine, bare float64) float64 {
	if paired.N > 0 {
		return paired.Median
	}
	return mine - bare
}

type stats struct {
	N                          int
	Median, Min, Max, P90, P99 float64
}

// runJSON runs one of the bench module's programs (go run args), its
// table on stderr, and reads the JSON it writes with -json into out.
func runJSON(dir string, args []string, out any) error {
	f, err := os.CreateTemp("", "bench-*.json")
	if err != nil {
		return err
	}
	f.Close()
	defer os.Remove(f.Name())
	cmd := exec.Command("go", append(args, "-json", f.Name())...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	fmt.Fprintf(os.Stderr, "running go %s in %s\n", strings.Join(cmd.Args[1:], " "), dir)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %v", strings.Join(args, " "), err)
	}
	return readJSON(f.Name(), out)
}

// readJSON reads a saved -json output into out.
func readJSON(path string, out any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

func (r *coldReport) get(name string) *coldResult {
	for _, x := range r.Results {
		if x.Name == name {
			return x
		}
	}
	return nil
}

// sample is one benchmark line's measurements.
type sample struct{ ns, bytes, allocs float64 }

// results are the parsed samples, keyed by benchmark (request) then
// implementation, and the environment lines (goos, goarch, cpu).
type results struct {
	samples map[string]map[string][]sample
	env     map[string]string
	procs   string // the -N suffix: GOMAXPROCS
}

var lineRE = regexp.MustCompile(`^Benchmark([^/\s]+?)(?:/impl=([^\s]+?))?(?:-(\d+))?\s+\d+\s+(.*)$`)

// parse reads go test -bench output.
func parse(r io.Reader) (*results, error) {
	res := &results{samples: map[string]map[string][]sample{}, env: map[string]string{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		for _, k := range []string{"goos", "goarch", "cpu"} {
			if v, ok := strings.CutPrefix(line, k+": "); ok {
				res.env[k] = v
			}
		}
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var s sample
		f := strings.Fields(m[4])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %v", line, err)
			}
			switch f[i+1] {
			case "ns/op":
				s.ns = v
			case "B/op":
				s.bytes = v
			case "allocs/op":
				s.allocs = v
			}
		}
		req, impl := m[1], m[2]
		res.procs = m[3]
		if res.samples[req] == nil {
			res.samples[req] = map[string][]sample{}
		}
		res.samples[req][impl] = append(res.samples[req][impl], s)
	}
	return res, sc.Err()
}

// median returns the median of each measurement of ss.
func median(ss []sample) sample {
	pick := func(get func(sample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = get(s)
		}
		slices.Sort(v)
		n := len(v)
		if n%2 == 1 {
			return v[n/2]
		}
		return (v[n/2-1] + v[n/2]) / 2
	}
	return sample{
		ns:     pick(func(s sample) float64 { return s.ns }),
		bytes:  pick(func(s sample) float64 { return s.bytes }),
		allocs: pick(func(s sample) float64 { return s.allocs }),
	}
}

// meta describes the run.
type meta struct {
	date, goVersion, goos, goarch string
	testCmd, coldCmd, liveCmd     string
	cpus                          int
	peers                         []string
	live                          *liveReport
	enlisted                      *enlistedReport
}

// medians are the medians by benchmark then implementation.
type medians map[string]map[string]sample

func (m medians) get(bench, impl string) (sample, bool) {
	s, ok := m[bench][impl]
	return s, ok
}

// write prints the Markdown report.
func write(w io.Writer, res *results, cs *coldReport, m *meta) {
	med := medians{}
	runs := 0
	for req, byImpl := range res.samples {
		med[req] = map[string]sample{}
		for impl, ss := range byImpl {
			med[req][impl] = median(ss)
			runs = max(runs, len(ss))
		}
	}

	fmt.Fprintf(w, "# Performance\n\n")
	fmt.Fprintf(w, "Generated by `make bench` (`cd bench && go run ./report`, bench/report); do not edit by hand.\n"+
		"It compares this project's stateless server answering MCP 2026-07-28 requests with the official Go SDK\n"+
		"(`gosdk`), mcp-go (`mcpgo`) and an encoding/json floor (`floor`), in process, as Lambda events,\n"+
		"and as Lambda functions under the runtime emulator. The bench/ module's doc comments say how\n"+
		"each is measured; every answer is checked before it is timed.\n\n")

	fmt.Fprintf(w, "## Machine\n\n")
	fmt.Fprintf(w, "- date: %s\n", m.date)
	fmt.Fprintf(w, "- Go: %s, %s/%s (benchmark output: goos %s, goarch %s)\n", m.goVersion, m.goos, m.goarch, res.env["goos"], res.env["goarch"])
	fmt.Fprintf(w, "- CPU: %s; %d logical CPUs, GOMAXPROCS %s\n", orDash(res.env["cpu"]), m.cpus, orDash(res.procs))
	if len(m.peers) > 0 {
		fmt.Fprintf(w, "- peers: %s\n", strings.Join(m.peers, ", "))
	}
	if cs != nil {
		fmt.Fprintf(w, "- emulator: aws-lambda-rie (%s); functions built with `GOOS=linux CGO_ENABLED=0 go build %s`\n",
			orDash(cs.RIEVersion), cs.BuildFlags)
	}
	fmt.Fprintf(w, "- in-process and Lambda-event benchmarks: median of %d rounds of `%s`, each measuring every implementation once\n", runs, m.testCmd)

	writeTargets(w, med, cs)
	writeInProcess(w, med)
	writeLambda(w, med)
	if cs != nil {
		writeCold(w, cs)
	}
	if m.live != nil {
		writeLive(w, m.live)
	}

	fmt.Fprintf(w, "\n## AWS calls per request\n\nCounted with SDK middleware against DynamoDB Local and local-kms, and asserted, by the "+
		"integration tests (`make integration`: pkg/claims TestRoundTrips, pkg/reqstate TestKMSAcrossInstances, "+
		"interop TestGoSDKElicitationAcrossInstances, notebook TestSAMLocalEnvironment, pkg/ratelimit TestDynamoDBSlots), not timed here. "+
		"The figures are the call's own; the default quotas (MCP_QUOTAS) add, to each tools/call, prompts/get and resources/read, "+
		"1 write (the calls counter's UpdateItem), and to each of those on a stream (the streaming door) 2 more (its slot taken and given back); "+
		"a task 2 writes (its slot):\n\n"+
		"| request | DynamoDB | KMS |\n|---|---:|---:|\n"+
		"| read-only tools/call (and discover, lists, reads) | 0 (the tool's own reads aside) | 0 |\n"+
		"| side-effecting keyed tools/call claimed first, first | 2 writes (the claim's PutItem; its completion's UpdateItem, or a TransactWriteItems of it and the items the tool enlisted) | 0 |\n"+
		"| the same call again (replay, in progress or conflict) | 1 (PutItem, ALL_OLD) | 0 |\n"+
		"| multi-round round, steady state | 0 | 0 |\n"+
		"| multi-round round, state sealed on another instance, first time | 0 | 1 Decrypt |\n"+
		"| first seal on an instance, or after rotation (1 h or 1,000,000 seals) | 0 | 1 GenerateDataKey |\n\n"+
		"The demo's calls, each DynamoDB request counted and billed as DynamoDB bills it (the tool's own reads and writes, the claims', the quotas'), "+
		"are in docs/deploy.md, \"What it costs\", measured by notebook's TestCostTable.\n")
	writeEnlisted(w, m.enlisted)

	fmt.Fprintf(w, "\n## Findings (not measured)\n\nA wrong answer is no fair measure, so these benchmarks are skipped "+
		"(bench/findings.go); TestFindings and TestLambdaFindings check that each still holds.\n\n")
	for _, f := range bench.Findings {
		fmt.Fprintf(w, "- `%s`: %s\n", f.ID, f.Summary)
	}

	fmt.Fprintf(w, "\n## Reproducing\n\n```sh\nmake tools   # once: the pinned aws-lambda-rie, among others\nmake bench   # runs everything below and rewrites this file\n```\n\n")
	fmt.Fprintf(w, "or, in `bench/`, the parts alone:\n\n```sh\n%s   # in process and Lambda events\n%s     # sizes, cold start, warm latency\n%s   # live progress\n```\n\n",
		m.testCmd, m.coldCmd, m.liveCmd)
	fmt.Fprintf(w, "`go run ./report -raw out.txt` keeps the raw benchmark output for benchstat "+
		"(`benchstat -col /impl out.txt`); `go run ./report -in out.txt -coldin cold.json`, with cold.json from "+
		"`go run ./coldstart -json cold.json`, rebuilds this file from saved outputs. "+
		"Timings vary with the machine and its load; compare rows of one run, not runs of different machines.\n")
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

var toolCalls = []*bench.Case{bench.ToolsCallEcho, bench.ToolsCallAdd}

// writeTargets marks each target met or missed. The per-call targets are
// judged in process (the net/http face, as the benchmarks have always
// been); the same figures on the Lambda path follow for information.
func writeTargets(w io.Writer, med medians, cs *coldReport) {
	fmt.Fprintf(w, "\n## Targets\n\nPer-call targets are judged on tools/call in process (both echo and add must meet them);"+
		" the cold-start target under the emulator.\n\n")
	fmt.Fprintf(w, "| target | ToolsCallEcho | ToolsCallAdd | verdict |\n|---|---:|---:|---|\n")
	type target struct {
		name string
		val  func(ours, gosdk, mcpgo, floor sample) (string, bool)
	}
	targets := []target{
		{fmt.Sprintf("time gosdk/ours ≥ %.0fx", targetTime), func(o, g, _, _ sample) (string, bool) {
			return times(g.ns, o.ns), g.ns/o.ns >= targetTime
		}},
		{fmt.Sprintf("allocs gosdk/ours ≥ %.0fx", targetAllocs), func(o, g, _, _ sample) (string, bool) {
			return times(g.allocs, o.allocs), g.allocs/o.allocs >= targetAllocs
		}},
		{fmt.Sprintf("time ours/floor ≤ %.1fx (of encoding/json)", targetFloor), func(o, _, _, f sample) (string, bool) {
			return times(o.ns, f.ns), o.ns/f.ns <= targetFloor
		}},
		{fmt.Sprintf("time mcpgo/ours ≥ %.0fx", targetMCPGo), func(o, _, mg, _ sample) (string, bool) {
			return times(mg.ns, o.ns), mg.ns/o.ns >= targetMCPGo
		}},
		{fmt.Sprintf("ours ≤ %d allocs/op", targetMaxAlloc), func(o, _, _, _ sample) (string, bool) {
			return num(o.allocs), o.allocs <= targetMaxAlloc
		}},
		{fmt.Sprintf("ours ≤ %d B/op (7.2 KB)", targetMaxBytes), func(o, _, _, _ sample) (string, bool) {
			return num(o.bytes), o.bytes <= targetMaxBytes
		}},
	}
	for _, t := range targets {
		fmt.Fprintf(w, "| %s |", t.name)
		all, measured := true, true
		for _, c := range toolCalls {
			o, ok1 := med.get(c.Name, "ours")
			g, ok2 := med.get(c.Name, "gosdk")
			mg, ok3 := med.get(c.Name, "mcpgo")
			f, ok4 := med.get(c.Name, "floor")
			if !ok1 || !ok2 || !ok3 || !ok4 {
				fmt.Fprintf(w, " not measured |")
				measured = false
				continue
			}
			s, met := t.val(o, g, mg, f)
			fmt.Fprintf(w, " %s |", s)
			all = all && met
		}
		fmt.Fprintf(w, " %s |\n", verdictOf(measured, all))
	}
	writeInlineRow(w, med, "", fmt.Sprintf("time mcpgo/ours-inline ≥ %.0fx (tools declared Inline, handlers on the request's goroutine as the peers run theirs)", targetMCPGo), targetMCPGo, true)
	writeQuotaRow(w, med)
	writeListRow(w, med)
	if cs == nil {
		fmt.Fprintf(w, "| cold start added over bare ≤ gosdk's | not measured | | not measured |\n")
	} else {
		o, g, b := cs.get("ours"), cs.get("gosdk"), cs.get("bare")
		if o == nil || g == nil || b == nil {
			fmt.Fprintf(w, "| cold start added over bare ≤ gosdk's | not measured | | not measured |\n")
		} else {
			// Judged on the total, as defined; the parts that exclude
			// the emulator's own start are shown too, since a margin
			// smaller than their disagreement is noise.
			ao, ag := added(o.ColdOverBare, o.Cold.Median, b.Cold.Median), added(g.ColdOverBare, g.Cold.Median, b.Cold.Median)
			fo, fg := added(o.FirstOverBare, o.First.Median, b.First.Median), added(g.FirstOverBare, g.First.Median, b.First.Median)
			ino, ing := added(o.InitOverBare, o.Init.Median, b.Init.Median), added(g.InitOverBare, g.Init.Median, b.Init.Median)
			fmt.Fprintf(w, "| cold start added over bare ≤ gosdk's (median, tools/call echo) | ours %+.2f ms, gosdk %+.2f ms "+
				"(first invoke: ours %+.2f, gosdk %+.2f; emulator init: ours %+.2f, gosdk %+.2f) | | %s |\n",
				ao, ag, fo, fg, ino, ing, verdictOf(true, ao <= ag))
			fmt.Fprintf(w, "| runtime init under the emulator over bare ≤ %+.1f ms (median) | ours %+.2f ms (gosdk %+.2f) | | %s |\n",
				targetInitOverBare, ino, ing, verdictOf(true, ino <= targetInitOverBare))
		}
	}

	fmt.Fprintf(w, "\nThe same per-call figures on the Lambda path (event payload in, response payload out; ours through pkg/apigw, "+
		"no floor there); its own targets are at most %d allocations and mcp-go at least %.0fx slower, the rest as in process:"+
		"\n\n| figure | ToolsCallEcho | ToolsCallAdd | within the target |\n|---|---:|---:|---|\n", targetLambdaAlloc, targetLambdaMCPGo)
	lambdaRows := []struct {
		name string
		val  func(o, g, mg sample) (string, bool)
	}{
		{"time gosdk/ours", func(o, g, _ sample) (string, bool) { return times(g.ns, o.ns), g.ns/o.ns >= targetTime }},
		{"allocs gosdk/ours", func(o, g, _ sample) (string, bool) {
			return times(g.allocs, o.allocs), g.allocs/o.allocs >= targetAllocs
		}},
		{"time mcpgo/ours", func(o, _, mg sample) (string, bool) { return times(mg.ns, o.ns), mg.ns/o.ns >= targetLambdaMCPGo }},
		{"ours allocs/op", func(o, _, _ sample) (string, bool) { return num(o.allocs), o.allocs <= targetLambdaAlloc }},
		{"ours B/op", func(o, _, _ sample) (string, bool) { return num(o.bytes), o.bytes <= 8192 }},
	}
	for _, r := range lambdaRows {
		fmt.Fprintf(w, "| %s |", r.name)
		all, measured := true, true
		for _, c := range toolCalls {
			o, ok1 := med.get("Lambda"+c.Name, "ours")
			g, ok2 := med.get("Lambda"+c.Name, "gosdk")
			mg, ok3 := med.get("Lambda"+c.Name, "mcpgo")
			if !ok1 || !ok2 || !ok3 {
				fmt.Fprintf(w, " not measured |")
				measured = false
				continue
			}
			s, met := r.val(o, g, mg)
			fmt.Fprintf(w, " %s |", s)
			all = all && met
		}
		fmt.Fprintf(w, " %s |\n", yesNo(measured, all))
	}
	writeInlineRow(w, med, "Lambda", "time mcpgo/ours-inline (tools declared Inline)", targetLambdaMCPGo, false)
}

// writeQuotaRow prints ours-quota's time over ours' for both tool calls:
// what the default quotas (on their memory counters) add to a call.
func writeQuotaRow(w io.Writer, med medians) {
	fmt.Fprintf(w, "| time ours-quota/ours ≤ %.2fx (the default quotas, memory counters) |", targetQuota)
	all, measured := true, true
	for _, c := range toolCalls {
		q, ok1 := med.get(c.Name, "ours-quota")
		o, ok2 := med.get(c.Name, "ours")
		if !ok1 || !ok2 {
			fmt.Fprintf(w, " not measured |")
			measured = false
			continue
		}
		fmt.Fprintf(w, " %s |", times(q.ns, o.ns))
		all = all && q.ns/o.ns <= targetQuota
	}
	fmt.Fprintf(w, " %s |\n", verdictOf(measured, all))
}

// writeListRow prints mcp-go's time over ours' on tools/list, judged
// against its target (the row's second column is empty: one request).
func writeListRow(w io.Writer, med medians) {
	fmt.Fprintf(w, "| time mcpgo/ours ≥ %.0fx on tools/list |", targetListMCPGo)
	o, ok1 := med.get(bench.ToolsList.Name, "ours")
	mg, ok2 := med.get(bench.ToolsList.Name, "mcpgo")
	if !ok1 || !ok2 {
		fmt.Fprintf(w, " not measured | | not measured |\n")
		return
	}
	fmt.Fprintf(w, " %s | | %s |\n", times(mg.ns, o.ns), verdictOf(true, mg.ns/o.ns >= targetListMCPGo))
}

// writeInlineRow prints mcp-go's time over ours-inline's for both tool
// calls, judged against target: a verdict in the targets table, yes or
// no in the Lambda one.
func writeInlineRow(w io.Writer, med medians, prefix, name string, target float64, verdict bool) {
	fmt.Fprintf(w, "| %s |", name)
	all, measured := true, true
	for _, c := range toolCalls {
		o, ok1 := med.get(prefix+c.Name, "ours-inline")
		mg, ok2 := med.get(prefix+c.Name, "mcpgo")
		if !ok1 || !ok2 {
			fmt.Fprintf(w, " not measured |")
			measured = false
			continue
		}
		fmt.Fprintf(w, " %s |", times(mg.ns, o.ns))
		all = all && mg.ns/o.ns >= target
	}
	if verdict {
		fmt.Fprintf(w, " %s |\n", verdictOf(measured, all))
	} else {
		fmt.Fprintf(w, " %s |\n", yesNo(measured, all))
	}
}

func yesNo(measured, met bool) string {
	switch {
	case !measured:
		return "not measured"
	case met:
		return "yes"
	}
	return "no"
}

func verdictOf(measured, met bool) string {
	switch {
	case !measured:
		return "not measured"
	case met:
		return "**met**"
	}
	return "**missed**"
}

// writeInProcess prints the in-process tables: every request and
// implementation through its http.Handler.
func writeInProcess(w io.Writer, med medians) {
	fmt.Fprintf(w, "\n## In process (http.Handler)\n\nEach implementation's http.Handler with a fresh *http.Request and "+
		"httptest.ResponseRecorder per call (bench/bench_test.go). `ours` runs its tools as by default: each handler on the "+
		"request's goroutine, a timer standing ready to answer in-band at the deadline one that ignores its context "+
		"(the recorder can flush: a stateless.Ender); "+
		"`ours-inline` is the same server with its tools declared Inline (stateless.Tool.Inline), which has no timer and "+
		"answers an overrun when the handler returns, as the peers do.\n\n")
	names := make([]string, len(bench.Impls))
	for i, im := range bench.Impls {
		names[i] = im.Name
	}
	writeTable(w, med, "", names)
	if h, ok := med.get("Harness", ""); ok {
		fmt.Fprintf(w, "\nThe harness alone (fresh request and recorder, no server) costs %s ns/op, %s B/op, %s allocs/op; every row includes it.\n",
			num(h.ns), num(h.bytes), num(h.allocs))
	}
	writeRatios(w, med, "", [][2]string{{"gosdk", "ours"}, {"mcpgo", "ours"}, {"ours", "floor"}, {"mcpgo", "ours-inline"}, {"ours", "ours-inline"}, {"ours-quota", "ours"}})

	fmt.Fprintf(w, "\n### Construction\n\nBuilding the handler with its two tools (BenchmarkNew), which every cold start pays once:\n\n"+
		"| impl | ns/op | B/op | allocs/op |\n|---|---:|---:|---:|\n")
	for _, n := range names {
		if s, ok := med.get("New", n); ok && n != "floor" {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", n, num(s.ns), num(s.bytes), num(s.allocs))
		}
	}
}

// writeLambda prints the Lambda-event tables.
func writeLambda(w io.Writer, med medians) {
	fmt.Fprintf(w, "\n## Lambda events\n\nThe same requests as API Gateway HTTP API (payload 2.0) events, from the event "+
		"payload to the response payload, as the Lambda runtime hands them over (no emulator, no network). `ours` is our "+
		"production path, pkg/apigw.Handler.InvokeEarly as pkg/runner's runtime calls it, with no net/http; `ours-nethttp` and the peers go through one minimal adapter "+
		"(bench/impl/lambdahttp: decode the event, build an *http.Request, serve it into an httptest.ResponseRecorder, "+
		"encode the response), what a peer's user would write. `ours-inline` is ours with its tools declared Inline, as in process.\n\n")
	names := make([]string, len(bench.LambdaImpls))
	for i, im := range bench.LambdaImpls {
		names[i] = im.Name
	}
	writeTable(w, med, "Lambda", names)
	writeRatios(w, med, "Lambda", [][2]string{{"gosdk", "ours"}, {"mcpgo", "ours"}, {"ours-nethttp", "ours"}, {"mcpgo", "ours-inline"}, {"ours", "ours-inline"}})

	fmt.Fprintf(w, "\nOurs on the Lambda path against ours in process (the event's decoding and the response payload's "+
		"encoding, less the in-process harness):\n\n| request | Δ ns/op | Δ B/op | Δ allocs/op |\n|---|---:|---:|---:|\n")
	for _, c := range bench.All {
		l, ok1 := med.get("Lambda"+c.Name, "ours")
		p, ok2 := med.get(c.Name, "ours")
		if ok1 && ok2 {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", c.Name, signed(l.ns-p.ns), signed(l.bytes-p.bytes), signed(l.allocs-p.allocs))
		}
	}
	fmt.Fprintf(w, "\nTo see where it goes: `go test -run='^$' -bench='LambdaToolsCallEcho/impl=ours$' -cpuprofile cpu.out "+
		"-memprofile mem.out` in bench/, then `go tool pprof -top -cum bench.test cpu.out`.\n")
}

// writeTable prints one row per request and implementation; prefix picks
// the benchmark family ("" in process, "Lambda").
func writeTable(w io.Writer, med medians, prefix string, impls []string) {
	fmt.Fprintf(w, "| request | impl | ns/op | B/op | allocs/op |\n|---|---|---:|---:|---:|\n")
	for _, c := range bench.All {
		for _, name := range impls {
			s, ok := med.get(prefix+c.Name, name)
			switch {
			case ok:
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", c.Name, name, num(s.ns), num(s.bytes), num(s.allocs))
			case bench.FindingFor(name, c) != nil:
				fmt.Fprintf(w, "| %s | %s | skipped: finding `%s` | | |\n", c.Name, name, bench.FindingFor(name, c).ID)
			default:
				fmt.Fprintf(w, "| %s | %s | not run | | |\n", c.Name, name)
			}
		}
	}
}

// writeRatios prints the ratios of medians num/den for each pair.
func writeRatios(w io.Writer, med medians, prefix string, pairs [][2]string) {
	fmt.Fprintf(w, "\nRatios of medians:\n\n| request |")
	for _, p := range pairs {
		r := p[0] + "/" + p[1]
		fmt.Fprintf(w, " time %s | B %s | allocs %s |", r, r, r)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", 3*len(pairs)))
	for _, c := range bench.All {
		fmt.Fprintf(w, "| %s |", c.Name)
		for _, p := range pairs {
			a, okA := med.get(prefix+c.Name, p[0])
			b, okB := med.get(prefix+c.Name, p[1])
			if !okA || !okB {
				fmt.Fprintf(w, " – | – | – |")
				continue
			}
			fmt.Fprintf(w, " %s | %s | %s |", times(a.ns, b.ns), times(a.bytes, b.bytes), times(a.allocs, b.allocs))
		}
		fmt.Fprintln(w)
	}
}

// writeCold prints sizes, cold start and warm latency.
func writeCold(w io.Writer, cs *coldReport) {
	bare := cs.get("bare")
	fmt.Fprintf(w, "\n## As Lambda functions\n\n")
	fmt.Fprintf(w, "Each subject is a Lambda bootstrap (bench/coldstart): `bare` is aws-lambda-go answering a fixed response; "+
		"`ours` the bench server on pkg/apigw.Handler (bench/cmd/ours), its tools' schemas generated ahead of time and flat, so it infers none and needs no schema engine (it links none: pkg/stateless imports no schema library, and no URI template library or regexp: it has no resource templates); "+
		"`bare-jsonschema` and `bare-jsonv2` bare linking, unused, google/jsonschema-go (pkg/toolschema's engine, which a function links when it sets it for schemas beyond flat ones) "+
		"and go-json-experiment/json (the core's decoder): what their package initialization alone adds; `product` the production composition serving the note book, functions/fixture (what the deployed demo runs), "+
		"built in the main module and logging one line per request as deployed; `gosdk` and `mcpgo` the peers behind bench/impl/lambdahttp (bench/cmd/gosdk, bench/cmd/mcpgo). "+
		"Each binary links its own implementation only.\n\n")
	fmt.Fprintf(w, "### Binary sizes\n\n| subject | linux/amd64 | linux/arm64 | arm64 over bare |\n|---|---:|---:|---:|\n")
	for _, r := range cs.Results {
		over := "–"
		if bare != nil && r != bare {
			over = signed(float64(r.Size["arm64"] - bare.Size["arm64"]))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", r.Name, mib(r.Size["amd64"]), mib(r.Size["arm64"]), over)
	}

	fmt.Fprintf(w, "\n### Cold start (linux/amd64, under aws-lambda-rie)\n\n")
	fmt.Fprintf(w, "The emulator starts the bootstrap on the first invocation, not when it starts, so a cold start is timed "+
		"from starting aws-lambda-rie to the first answered invocation: tools/call echo, except for `product`, which has no "+
		"echo tool and answers a read-only tools/call of notes_search with arguments {} (its notes in memory, no claims "+
		"table; a KMS key is configured, so the KMS sealer is built, but no AWS client is created). Median of %d fresh "+
		"processes each, started in rounds of one start per subject, each round in an order drawn anew from a fixed seed, after one unmeasured round. The total includes the emulator's "+
		"own start (about the same for every subject, waited for by polling every 20 ms); *first invoke* is the rest "+
		"(exec, Go runtime and package init, main, the first invocation); *emulator init* is the emulator's `INIT REPORT` "+
		"(exec until the runtime asks for its first event). *Added over bare* is the median of the paired differences: in each "+
		"round, the subject's figure less bare's in the same round, so that the machine's drift between rounds cancels. Before each start the bootstrap is evicted from "+
		"the page cache and read back (not timed), so that every start execs a freshly loaded file: how a load lays a file out "+
		"in the cache moved one binary's page faults by 25 to 35 a start, each about 24 µs here. A real Lambda cold start also "+
		"fetches the code, which is not timed here.\n\n", cs.ColdRuns)
	fmt.Fprintf(w, "| subject | request | cold ms (median) | min | max | added over bare | first invoke ms | added over bare | emulator init ms | added over bare |\n"+
		"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range cs.Results {
		add := func(paired stats, mine float64, bareOf func(*coldResult) float64) string {
			if bare == nil || r == bare {
				return "–"
			}
			return fmt.Sprintf("%+.2f", added(paired, mine, bareOf(bare)))
		}
		fmt.Fprintf(w, "| %s | %s | %.2f | %.2f | %.2f | %s | %.2f | %s | %.2f | %s |\n", r.Name, r.Request,
			r.Cold.Median, r.Cold.Min, r.Cold.Max, add(r.ColdOverBare, r.Cold.Median, func(x *coldResult) float64 { return x.Cold.Median }),
			r.First.Median, add(r.FirstOverBare, r.First.Median, func(x *coldResult) float64 { return x.First.Median }),
			r.Init.Median, add(r.InitOverBare, r.Init.Median, func(x *coldResult) float64 { return x.Init.Median }))
	}

	fmt.Fprintf(w, "\n### Warm invocations\n\n%d sequential invocations in one process after its cold one. *Round trip* is "+
		"the client's view through the emulator (HTTP to aws-lambda-rie, the runtime API, the function, back); *in function* "+
		"is the emulator's `INVOKE RTDONE` duration (event handed over to response posted).\n\n", cs.WarmRuns)
	fmt.Fprintf(w, "| subject | round trip ms (median) | min | max | p90 | in function ms (median) | min | max |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range cs.Results {
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", r.Name,
			r.Warm.Median, r.Warm.Min, r.Warm.Max, r.Warm.P90, r.WarmFunc.Median, r.WarmFunc.Min, r.WarmFunc.Max)
	}
	for _, r := range cs.Results {
		if len(r.Doors) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n### Warm invocations by door\n\n`%s` (%s) answering the same request as each of its doors delivers it: "+
			"the event `make event` prints for the door (cmd/mcp-event: an HTTP API payload 2.0 event, a REST API proxy event, "+
			"a function URL event), %d sequential warm invocations each, every answer checked. Figures as above; p99 is the "+
			"99th of the sorted round trips.\n\n", r.Name, r.Request, r.Doors[0].Warm.N)
		fmt.Fprintf(w, "| door | round trip ms (p50) | p90 | p99 | in function ms (p50) | p90 | p99 |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, d := range r.Doors {
			fmt.Fprintf(w, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", d.Door,
				d.Warm.Median, d.Warm.P90, d.Warm.P99, d.WarmFunc.Median, d.WarmFunc.P90, d.WarmFunc.P99)
		}
	}
}

// mib formats a byte count with its MiB.
func mib(n int64) string {
	return fmt.Sprintf("%s (%.2f MiB)", num(float64(n)), float64(n)/(1<<20))
}

// signed formats a difference with its sign.
func signed(v float64) string {
	if v < 0 {
		return "−" + num(-v)
	}
	return "+" + num(v)
}

// num formats v with thousands separators, keeping one decimal below 100.
func num(v float64) string {
	if v < 100 && v != float64(int64(v)) {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	s := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// times formats a/b as a multiplier.
func times(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "x"
}

// liveReport mirrors the JSON that firstevent -json writes.
type liveReport struct {
	Runs    int
	Results []struct {
		Door                              string
		FirstEvent, Result, FirstEventP90 float64
	}
}

// writeLive writes the live-progress table: when the first progress
// report and the result of a call reach the client, per front door.
func writeLive(w io.Writer, r *liveReport) {
	fmt.Fprintf(w, "\n## Live progress\n\nTime from a tools/call to its first progress notification and to its result, "+
		"at the client, median of %d calls per door after one warm-up (bench/firstevent). The tool (the conformance "+
		"fixture's `ticks`) reports 10 times, 100 ms apart: its first report exists 100 ms after the call and its result "+
		"1 s after; what a door adds is the rest. The Lambda doors are the bootstrap under a loopback Runtime API that "+
		"passes a response on as it is written (the runtime interface emulator buffers it whole): the streaming door "+
		"invoked for a response stream behind a front that reads the prelude, the buffered door with an HTTP API event "+
		"answered whole (docs/streaming.md).\n\n| door | first event | first event, p90 | result |\n|---|---:|---:|---:|\n", r.Runs)
	for _, d := range r.Results {
		fmt.Fprintf(w, "| %s | %.1f ms | %.1f ms | %.1f ms |\n", d.Door, d.FirstEvent, d.FirstEventP90, d.Result)
	}
}
