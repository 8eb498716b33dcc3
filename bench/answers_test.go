package bench

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
)

// implNamed returns the implementation with benchmark key name.
func implNamed(t testing.TB, name string) Impl {
	t.Helper()
	for _, im := range Impls {
		if im.Name == name {
			return im
		}
	}
	t.Fatalf("no implementation %q", name)
	return Impl{}
}

// testAnswers checks that the implementation answers every request
// rightly, three times over on one handler, as the benchmarks reuse it.
// A request covered by a finding is skipped here and documented by
// TestFindings.
func testAnswers(t *testing.T, name string) {
	h := implNamed(t, name).New()
	for _, c := range All {
		t.Run(c.Name, func(t *testing.T) {
			if f := FindingFor(name, c); f != nil {
				t.Skipf("finding %s (see TestFindings)", f.ID)
			}
			for i := range 3 {
				a := c.Do(h)
				if err := c.Check(a); err != nil {
					t.Fatalf("answer %d is wrong: %v\nstatus %d, header %v\n%s", i, err, a.Status, a.Header, a.Body)
				}
			}
		})
	}
}

// TestAnswersOurs verifies this project's stateless server.
func TestAnswersOurs(t *testing.T) { testAnswers(t, "ours") }

// TestAnswersOursQuota verifies our server behind the default quotas.
func TestAnswersOursQuota(t *testing.T) { testAnswers(t, "ours-quota") }

// TestAnswersGoSDK verifies the official Go SDK.
func TestAnswersGoSDK(t *testing.T) { testAnswers(t, "gosdk") }

// TestAnswersMCPGo verifies mcp-go.
func TestAnswersMCPGo(t *testing.T) { testAnswers(t, "mcpgo") }

// TestAnswersFloor verifies that the floor's canned answers pass the same
// checks, so that it does at least the work of a right answer's encoding.
func TestAnswersFloor(t *testing.T) { testAnswers(t, "floor") }

// TestFloorMatchesOurs checks that the floor encodes the same JSON value as
// our server for every request: the floor is a floor for our answers, not
// for shorter ones.
func TestFloorMatchesOurs(t *testing.T) {
	ours, floor := NewOurs(), NewFloor()
	for _, c := range All {
		t.Run(c.Name, func(t *testing.T) {
			a, b := c.Do(ours), c.Do(floor)
			if a.Status != b.Status {
				t.Errorf("status: ours %d, floor %d", a.Status, b.Status)
			}
			var va, vb any
			if err := json.Unmarshal(a.Body, &va); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b.Body, &vb); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(va, vb) {
				t.Errorf("bodies differ:\nours  %s\nfloor %s", a.Body, b.Body)
			}
		})
	}
}

// TestFindings documents every recorded wrong answer of a peer: it logs
// the request and the actual answer. It does not fail for the peer's bug;
// it fails only if a finding no longer holds, since its benchmark would then
// be skipped for nothing.
func TestFindings(t *testing.T) {
	for _, f := range Findings {
		t.Run(f.ID, func(t *testing.T) {
			c := f.Case
			a := c.Do(implNamed(t, f.Impl).New())
			t.Logf("%s: %s", f.ID, f.Summary)
			t.Logf("request: POST with headers %v\n%s", c.Header, c.Body)
			t.Logf("actual answer: HTTP %d %s, Content-Type %q, body %q",
				a.Status, http.StatusText(a.Status), a.Header.Get("Content-Type"), a.Body)
			err := c.Check(a)
			if err == nil {
				t.Fatalf("finding %s no longer holds: the answer is right; remove it from Findings", f.ID)
			}
			t.Logf("wrong because: %v", err)
		})
	}
}
