// Command firstevent measures live progress: how long after a tools/call
// its first progress notification reaches the client, and its result,
// through each front door — local HTTP (the function's local mode), the
// Lambda path's streaming door (the bootstrap invoked for a response
// stream through a loopback Runtime API that passes the response on as it
// is written, behind a front that reads the prelude) and its buffered door
// (an HTTP API event, answered whole). The tool is the conformance
// fixture's ticks: 10 reports 100 ms apart, so a report is made 100 ms
// after the call and the result 1 s after it; what a door adds is the
// rest. `make bench` runs it (through bench/report) and writes the medians
// into docs/performance.md.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/runtimeapi"
)

// Report is what -json writes.
type Report struct {
	Runs    int
	Results []Result
}

// Result is one door's medians, in milliseconds.
type Result struct {
	Door          string
	FirstEvent    float64 // the first progress report, after the call
	Result        float64 // the result, after the call
	FirstEventP90 float64
}

func main() {
	runs := flag.Int("runs", 20, "calls per door")
	out := flag.String("json", "", "write the report as JSON here")
	flag.Parse()
	dir, err := os.MkdirTemp("", "firstevent")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	local, boot := filepath.Join(dir, "conformance"), filepath.Join(dir, "bootstrap")
	build(local, "")
	build(boot, runtime.GOARCH)

	cmd := exec.Command(local)
	cmd.Env = append(os.Environ(), "MCP_ADDR=127.0.0.1:0")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		log.Fatal(err)
	}
	localURL := strings.TrimSpace(strings.TrimPrefix(line, "MCP endpoint: "))

	doors := []struct {
		name string
		url  string
	}{{"local HTTP", localURL}}
	for _, buffered := range []bool{false, true} {
		rt, err := runtimeapi.Start(runtimeapi.Options{Bootstrap: boot, Env: []string{"MCP_STREAM_EVENTS=rest", "MCP_REQUEST_TIMEOUT=28s"}})
		if err != nil {
			log.Fatal(err)
		}
		defer rt.Stop()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		door, name, path := rie.RESTAPI, "Lambda, streaming door", "/"+rie.RESTStage+"/mcp"
		if buffered {
			door, name, path = rie.HTTPAPI, "Lambda, buffered door", "/mcp"
		}
		go http.Serve(ln, &rie.StreamFront{Function: rt, Door: door})
		doors = append(doors, struct{ name, url string }{name, "http://" + ln.Addr().String() + path})
	}
	rep := Report{Runs: *runs}
	fmt.Fprintf(os.Stderr, "%-24s %12s %12s %12s\n", "door", "first event", "p90", "result")
	for _, d := range doors {
		call(d.url) // warm: the cold start is measured elsewhere
		var first, result []float64
		for range *runs {
			f, r := call(d.url)
			first, result = append(first, f), append(result, r)
		}
		res := Result{Door: d.name, FirstEvent: median(first), Result: median(result), FirstEventP90: pct(first, 0.9)}
		rep.Results = append(rep.Results, res)
		fmt.Fprintf(os.Stderr, "%-24s %9.1f ms %9.1f ms %9.1f ms\n", d.name, res.FirstEvent, res.FirstEventP90, res.Result)
	}
	if *out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*out, b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// call calls ticks and returns when its first progress report and its
// result arrived, in milliseconds after the call.
func call(url string) (first, result float64) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ticks","arguments":{"count":10,"intervalMs":100},` +
		`"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"ticks"}}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	events := 0
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		ms := float64(time.Since(start).Microseconds()) / 1000
		events++
		if strings.Contains(data, `"notifications/progress"`) {
			if first == 0 {
				first = ms
			}
			continue
		}
		if !strings.Contains(data, `"10 ticks"`) {
			log.Fatalf("%s: the answer is not the result: %s", url, data)
		}
		result = ms
	}
	if events != 11 || first == 0 || result == 0 {
		log.Fatalf("%s: %d events", url, events)
	}
	return first, result
}

func build(out, goarch string) {
	args := []string{"build", "-trimpath", "-o", out}
	env := os.Environ()
	if goarch != "" {
		args = append(args, "-tags", "lambda.norpc", "-ldflags=-s -w")
		env = append(env, "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0")
	}
	// Built in the main module, whose go.sum has the fixture's modules.
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/serverless-mcp/mcp-lambda").Output()
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command("go", append(args, "./functions/conformance")...)
	cmd.Dir = strings.TrimSpace(string(root))
	cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatal(err)
	}
}

func median(v []float64) float64 { return pct(v, 0.5) }

func pct(v []float64, p float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1)+0.5)]
}
