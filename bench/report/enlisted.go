package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// enlistedReport is what a keyed call of a tool whose only effect is
// enlisted DynamoDB writes (the demo's notes_add) cost in DynamoDB
// requests, first and replay, as notebook's TestKeyedEnlistedRequests
// counted them in this run at a proxy in front of DynamoDB Local; Err
// says why they were not.
type enlistedReport struct {
	First, Replay int
	Err           string
}

// enlistedLine is the line TestKeyedEnlistedRequests logs.
var enlistedLine = regexp.MustCompile(`DynamoDB requests per keyed enlisted call: first (\d+), replay (\d+)`)

// enlistedTest is how the test is run: built with the integration tag,
// then run in a network namespace that has only loopback, as make
// integration runs it (DynamoDB Local listens on every interface).
const enlistedTest = `go test -tags integration -c -o notebook.integration.test ./notebook && cd notebook && ` +
	`unshare -n -- sh -c 'ip link set lo up && exec "$0" -test.run=^TestKeyedEnlistedRequests$ -test.v' ../notebook.integration.test`

// measureEnlisted runs TestKeyedEnlistedRequests of the main module in
// mainDir and reads its figures.
func measureEnlisted(mainDir string) *enlistedReport {
	bin := filepath.Join(os.TempDir(), fmt.Sprintf("notebook-%d.integration.test", os.Getpid()))
	defer os.Remove(bin)
	build := exec.Command("go", "test", "-tags", "integration", "-c", "-o", bin, "./notebook")
	build.Dir = mainDir
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	fmt.Fprintf(os.Stderr, "running %s in %s\n", strings.Join(build.Args, " "), mainDir)
	if err := build.Run(); err != nil {
		return &enlistedReport{Err: fmt.Sprintf("building notebook's integration tests: %v", err)}
	}
	run := exec.Command("unshare", "-n", "--", "sh", "-c",
		`ip link set lo up && exec "$0" -test.count=1 -test.v -test.run '^TestKeyedEnlistedRequests$'`, bin)
	run.Dir = filepath.Join(mainDir, "notebook")
	var out bytes.Buffer
	run.Stdout = io.MultiWriter(&out, os.Stderr)
	run.Stderr = run.Stdout
	fmt.Fprintf(os.Stderr, "running TestKeyedEnlistedRequests in a loopback-only network namespace\n")
	err := run.Run()
	r := parseEnlisted(out.Bytes())
	if err != nil && r.Err == "" {
		r.Err = fmt.Sprintf("TestKeyedEnlistedRequests: %v", err)
	}
	return r
}

// readEnlisted reads the figures from a saved verbose output of the test.
func readEnlisted(path string) *enlistedReport {
	b, err := os.ReadFile(path)
	if err != nil {
		return &enlistedReport{Err: err.Error()}
	}
	return parseEnlisted(b)
}

func parseEnlisted(out []byte) *enlistedReport {
	m := enlistedLine.FindSubmatch(out)
	if m == nil {
		msg := "TestKeyedEnlistedRequests printed no figures"
		if bytes.Contains(out, []byte("--- FAIL")) || bytes.Contains(out, []byte("FAIL")) {
			msg = "TestKeyedEnlistedRequests failed"
		}
		return &enlistedReport{Err: msg}
	}
	first, _ := strconv.Atoi(string(m[1]))
	replay, _ := strconv.Atoi(string(m[2]))
	return &enlistedReport{First: first, Replay: replay}
}

// writeEnlisted prints the figures, or why there are none.
func writeEnlisted(w io.Writer, r *enlistedReport) {
	if r == nil {
		return
	}
	if r.Err != "" {
		fmt.Fprintf(w, "\nDynamoDB requests per keyed enlisted call: not measured in this run (%s; it needs `make tools` and root, for the "+
			"loopback-only network namespace).\n", r.Err)
		return
	}
	fmt.Fprintf(w, "\nDynamoDB requests per keyed enlisted call: first %d, replay %d\n\n"+
		"Counted in this run at a proxy in front of DynamoDB Local, the SDK's own retries included, by notebook's "+
		"TestKeyedEnlistedRequests (`%s`): the demo's keyed `notes_add`, whose only effect is DynamoDB writes enlisted "+
		"in its claim (`stateless.Tool.EnlistedEffectsOnly`): its claim, note, count and result are one `TransactWriteItems`, "+
		"and its replay the same transaction, cancelled by the claim's condition, which returns the record replayed "+
		"(docs/idempotency.md). The calls quota, off there, adds one `UpdateItem` to each.\n", r.First, r.Replay, enlistedTest)
}
