// Command report runs the benchmarks of the bench module and prints a
// Markdown table of the median ns/op, B/op and allocs/op of every request
// and implementation, with the ratios peer/ours and ours/floor.
//
// Run it from the bench module:
//
//	go run ./report                  # go test -run=^$ -bench=. -benchmem -count=6
//	go run ./report -raw out.txt     # also keep the raw output, for benchstat
//	go run ./report -in out.txt      # table of an earlier run, without running
//
// Benchmarks that a finding skips (see bench.Findings) are shown as
// skipped, naming the finding.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/serverless-mcp/mcp-lambda/bench"
)

// The tools/call targets: gosdk must take at least this many times our
// time and allocations.
const (
	targetTime   = 3.0
	targetAllocs = 5.0
)

func main() {
	count := flag.Int("count", 6, "go test -count")
	pattern := flag.String("bench", ".", "go test -bench")
	benchtime := flag.String("benchtime", "", "go test -benchtime (default: go test's)")
	in := flag.String("in", "", "parse this saved go test output instead of running the benchmarks")
	raw := flag.String("raw", "", "write the raw go test output to this file")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("report: ")

	var out []byte
	var err error
	if *in != "" {
		out, err = os.ReadFile(*in)
	} else {
		out, err = run(*pattern, *count, *benchtime)
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
	write(os.Stdout, res)
}

// run runs the benchmarks in the bench module's directory, echoing the
// output to stderr as it comes, and returns it.
func run(pattern string, count int, benchtime string) ([]byte, error) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return nil, fmt.Errorf("finding the bench module: %v", err)
	}
	args := []string{"test", "-run=^$", "-bench=" + pattern, "-benchmem", "-count=" + strconv.Itoa(count)}
	if benchtime != "" {
		args = append(args, "-benchtime="+benchtime)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = strings.TrimSpace(string(dir))
	var buf bytes.Buffer
	cmd.Stdout = io.MultiWriter(&buf, os.Stderr)
	cmd.Stderr = os.Stderr
	fmt.Fprintf(os.Stderr, "running go %s in %s\n", strings.Join(args, " "), cmd.Dir)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test: %v", err)
	}
	return buf.Bytes(), nil
}

// sample is one benchmark line's measurements.
type sample struct{ ns, bytes, allocs float64 }

// results are the parsed samples, keyed by request then implementation,
// and the environment lines (goos, goarch, cpu, pkg).
type results struct {
	samples map[string]map[string][]sample
	env     []string
}

var lineRE = regexp.MustCompile(`^Benchmark([^/\s]+?)(?:/impl=([^\s]+?))?(?:-\d+)?\s+\d+\s+(.*)$`)

// parse reads go test -bench output.
func parse(r io.Reader) (*results, error) {
	res := &results{samples: map[string]map[string][]sample{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		for _, k := range []string{"goos:", "goarch:", "cpu:"} {
			if strings.HasPrefix(line, k) && !slices.Contains(res.env, line) {
				res.env = append(res.env, line)
			}
		}
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var s sample
		f := strings.Fields(m[3])
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

// write prints the Markdown report.
func write(w io.Writer, res *results) {
	med := map[string]map[string]sample{}
	runs := 0
	for req, byImpl := range res.samples {
		med[req] = map[string]sample{}
		for impl, ss := range byImpl {
			med[req][impl] = median(ss)
			runs = max(runs, len(ss))
		}
	}
	get := func(c *bench.Case, impl string) (sample, bool) {
		s, ok := med[c.Name][impl]
		return s, ok
	}

	fmt.Fprintf(w, "## MCP 2026-07-28 in-process benchmarks\n\n")
	fmt.Fprintf(w, "Median of %d runs (`go test -bench -benchmem`); %s.\n\n", runs, strings.Join(res.env, ", "))
	fmt.Fprintf(w, "| request | impl | ns/op | B/op | allocs/op |\n|---|---|---:|---:|---:|\n")
	for _, c := range bench.All {
		for _, im := range bench.Impls {
			s, ok := get(c, im.Name)
			switch {
			case ok:
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", c.Name, im.Name, num(s.ns), num(s.bytes), num(s.allocs))
			case bench.FindingFor(im.Name, c) != nil:
				fmt.Fprintf(w, "| %s | %s | skipped: finding `%s` | | |\n", c.Name, im.Name, bench.FindingFor(im.Name, c).ID)
			default:
				fmt.Fprintf(w, "| %s | %s | not run | | |\n", c.Name, im.Name)
			}
		}
	}
	if h, ok := med["Harness"][""]; ok {
		fmt.Fprintf(w, "\nThe harness alone (fresh request and recorder, no server) costs %s ns/op, %s B/op, %s allocs/op; every row includes it.\n",
			num(h.ns), num(h.bytes), num(h.allocs))
	}

	type ratio struct{ name, num, den string }
	ratios := []ratio{{"gosdk/ours", "gosdk", "ours"}, {"mcpgo/ours", "mcpgo", "ours"}, {"ours/floor", "ours", "floor"}}
	fmt.Fprintf(w, "\n### Ratios of medians\n\n| request |")
	for _, r := range ratios {
		fmt.Fprintf(w, " time %s | B %s | allocs %s |", r.name, r.name, r.name)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", 3*len(ratios)))
	for _, c := range bench.All {
		fmt.Fprintf(w, "| %s |", c.Name)
		for _, r := range ratios {
			a, okA := get(c, r.num)
			b, okB := get(c, r.den)
			if !okA || !okB {
				fmt.Fprintf(w, " – | – | – |")
				continue
			}
			fmt.Fprintf(w, " %s | %s | %s |", times(a.ns, b.ns), times(a.bytes, b.bytes), times(a.allocs, b.allocs))
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintf(w, "\n### tools/call targets (gosdk/ours: time ≥ %.0fx, allocs ≥ %.0fx)\n\n", targetTime, targetAllocs)
	for _, c := range []*bench.Case{bench.ToolsCallEcho, bench.ToolsCallAdd} {
		g, okG := get(c, "gosdk")
		o, okO := get(c, "ours")
		if !okG || !okO {
			fmt.Fprintf(w, "- %s: not measured\n", c.Name)
			continue
		}
		fmt.Fprintf(w, "- %s: time %s (%s), allocs %s (%s)\n", c.Name,
			times(g.ns, o.ns), verdict(g.ns/o.ns >= targetTime),
			times(g.allocs, o.allocs), verdict(g.allocs/o.allocs >= targetAllocs))
	}

	var notes []string
	for _, f := range bench.Findings {
		notes = append(notes, fmt.Sprintf("- `%s`: %s", f.ID, f.Summary))
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n### Findings (not measured)\n\n%s\n", strings.Join(notes, "\n"))
	}
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

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "not met"
}
