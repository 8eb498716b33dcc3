package counterkit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/eventcheck"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/fntest"
)

var update = flag.Bool("update", false, "rewrite the counter's events' expected responses (make regen)")

const events = counter + "/events"

// TestCounterEvents: the counter's sample events are what make event
// prints for them (its Makefile's events target: a keyed count_add, its
// replay and count_get, through each of the three doors), and make
// invoke, in examples/counter as in a module of one's own (mcp.mk runs
// cmd/mcp-invoke with go run), passes every one of them through the
// counter's Lambda binary under the runtime emulator, each against its
// expected response. With -update (make regen) it rewrites the expected
// responses instead, from the same binary under the same emulator.
func TestCounterEvents(t *testing.T) {
	rie := fntest.RIEBinary(t)
	if *update {
		fntest.EventsThroughEmulator(t, events, fntest.BuildBootstrap(t, counter, fntest.HostArch), true)
		return
	}

	// Made by make event, as the Makefile says.
	made := t.TempDir()
	if out, err := makeCmd(t, counter, "events", "EVENTS="+made).CombinedOutput(); err != nil {
		t.Fatalf("make events: %v\n%s", err, out)
	}
	want, err := eventcheck.Events(made)
	if err != nil {
		t.Fatal(err)
	}
	have, err := eventcheck.Events(events)
	if err != nil {
		t.Fatal(err)
	}
	names := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if !slices.Equal(names(have), names(want)) {
		t.Errorf("examples/counter/events has %v, make events makes %v", names(have), names(want))
	}
	for _, ev := range want {
		name := filepath.Base(ev)
		if got, err := os.ReadFile(filepath.Join(events, name)); err != nil || !bytes.Equal(got, read(t, ev)) {
			t.Errorf("examples/counter/events/%s is not what make events makes (%v): run it there", name, err)
		}
	}
	for _, door := range []string{"http-api", "rest", "function-url"} {
		for _, tool := range []string{"count_add", "count_get"} {
			found := false
			for _, ev := range have {
				b := string(read(t, ev))
				found = found || (strings.Contains(b, `"Mcp-Name": "`+tool+`"`) || strings.Contains(b, `"mcp-name": "`+tool+`"`)) && doorOf(b) == door
			}
			if !found {
				t.Errorf("no event calls %s through the %s door", tool, door)
			}
		}
	}

	// make invoke: every event, each in a fresh emulator (the replay's
	// predecessor first), each answer against its expected response.
	out, err := makeCmd(t, counter, "invoke", "MCP_RIE="+rie, "MCP_DIR="+t.TempDir()).CombinedOutput()
	text := string(out)
	if err != nil {
		t.Fatalf("make invoke: %v\n%s", err, text)
	}
	for _, ev := range have {
		rel := "events/" + filepath.Base(ev)
		if !strings.Contains(text, "\nPASS "+rel+"\n") {
			t.Errorf("make invoke did not pass %s", rel)
		}
		if _, err := os.Stat(eventcheck.ExpectedPath(ev)); err != nil {
			t.Errorf("%s has no expected response (%v): make regen", rel, err)
		}
	}
	if !strings.Contains(text, "it replays events/count-add-keyed.json, so that runs first") || !strings.Contains(text, `"io.github.serverless-mcp/replay": true`) {
		t.Errorf("the keyed count_add's replay was not answered as one")
	}
	if want := "7 events: 7 passed, 0 failed\n"; !strings.HasSuffix(text, want) {
		t.Errorf("make invoke does not end with %q:\n%s", want, text)
	}
}

// doorOf is the door an event's shape is of.
func doorOf(event string) string {
	switch {
	case strings.Contains(event, `"httpMethod": "POST"`):
		return "rest"
	case strings.Contains(event, `"routeKey": "$default"`):
		return "function-url"
	}
	return "http-api"
}
