package bench

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestLambdaAnswers verifies every implementation on the Lambda path as
// TestAnswers* do over HTTP: every request, three times on one handler.
func TestLambdaAnswers(t *testing.T) {
	for _, im := range LambdaImpls {
		t.Run(im.Name, func(t *testing.T) {
			h := im.New()
			for _, c := range All {
				t.Run(c.Name, func(t *testing.T) {
					if f := FindingFor(im.Name, c); f != nil {
						t.Skipf("finding %s (see TestLambdaFindings)", f.ID)
					}
					for i := range 3 {
						a, err := c.Invoke(h)
						if err != nil {
							t.Fatal(err)
						}
						if err := c.Check(a); err != nil {
							t.Fatalf("answer %d is wrong: %v\nstatus %d, header %v\n%s", i, err, a.Status, a.Header, a.Body)
						}
					}
				})
			}
		})
	}
}

// TestLambdaFindings checks that every finding holds on the Lambda path
// too, since the Lambda benchmarks skip it as well.
func TestLambdaFindings(t *testing.T) {
	for _, f := range Findings {
		t.Run(f.ID, func(t *testing.T) {
			var h LambdaHandler
			for _, im := range LambdaImpls {
				if im.Name == f.Impl {
					h = im.New()
				}
			}
			if h == nil {
				t.Fatalf("no Lambda implementation %q", f.Impl)
			}
			a, err := f.Case.Invoke(h)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Case.Check(a); err == nil {
				t.Fatalf("finding %s no longer holds on the Lambda path", f.ID)
			}
			t.Logf("actual answer: HTTP %d, Content-Type %q, body %q", a.Status, a.Header.Get("Content-Type"), a.Body)
		})
	}
}

// TestLambdaSameAsHTTP checks that our server answers the same status and
// JSON value on both Lambda paths as over HTTP, so that the Lambda rows
// measure the same work.
func TestLambdaSameAsHTTP(t *testing.T) {
	for _, c := range All {
		t.Run(c.Name, func(t *testing.T) {
			want := c.Do(NewOurs())
			for _, im := range LambdaImpls[:2] {
				a, err := c.Invoke(im.New())
				if err != nil {
					t.Fatal(err)
				}
				if a.Status != want.Status || a.Header.Get("Content-Type") != want.Header.Get("Content-Type") {
					t.Errorf("%s: status %d %q, over HTTP %d %q", im.Name, a.Status, a.Header.Get("Content-Type"),
						want.Status, want.Header.Get("Content-Type"))
				}
				var va, vw any
				if err := json.Unmarshal(a.Body, &va); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(want.Body, &vw); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(va, vw) {
					t.Errorf("%s: body differs:\nlambda %s\nhttp   %s", im.Name, a.Body, want.Body)
				}
			}
		})
	}
}
