package chaos

import (
	"strings"
	"testing"
)

// answered is a definitive success answer naming a note.
func answered(id string, replay bool) *Answer {
	res := map[string]any{"structuredContent": map[string]any{"id": id}}
	if replay {
		res["_meta"] = map[string]any{metaReplay: true}
	}
	return &Answer{Status: 200, Result: res}
}

func okHistory(a *Answer) *History { return &History{Final: a, Attempts: []Attempt{{Class: OK}}} }

// violations runs the checks and returns the checks that failed, with
// their subjects.
func violations(l *Load, n *Notes) map[string][]string {
	out := map[string][]string{}
	for _, v := range l.Check(n).Violations {
		out[v.Check] = append(out[v.Check], v.Subject)
	}
	return out
}

func TestCheckKeys(t *testing.T) {
	key := func(name string, ids ...string) *KeyRecord {
		k := &KeyRecord{Key: name, Marker: "mk:" + name + ";", Kind: "add"}
		for _, id := range ids {
			k.IDs = append(k.IDs, id)
			k.Reqs = append(k.Reqs, okHistory(answered(id, false)))
		}
		return k
	}
	l := &Load{keys: []*KeyRecord{
		key("once", "n1"),
		key("twice", "n2"),         // a second note carries its marker
		key("lost", "n4"),          // answered, not in the table
		key("differs", "n5", "n6"), // two answers, two notes
		{Key: "never", Marker: "mk:never;", Kind: "add"},                                          // not pursued to success, no note: fine
		{Key: "ghost", Marker: "mk:ghost;", Kind: "add"},                                          // not answered, yet two notes
		{Key: "unanswered", Marker: "mk:unanswered;", Kind: "add", Reqs: []*History{{What: "x"}}}, // given up
	}}
	n := &Notes{
		ByMarker: map[string][]string{"mk:once;": {"n1"}, "mk:twice;": {"n2", "n3"}, "mk:differs;": {"n5", "n6"}, "mk:ghost;": {"n7", "n8"}},
		IDs:      map[string]bool{"n1": true, "n2": true, "n3": true, "n5": true, "n6": true, "n7": true, "n8": true},
	}
	got := violations(l, n)
	want := map[string][]string{
		CheckExactlyOnce: {"twice", "lost", "differs", "ghost"},
		CheckLostWrite:   {"lost"},
		CheckReplay:      {"differs"},
		CheckRecovered:   {"unanswered"},
	}
	for c, subjects := range want {
		if strings.Join(got[c], ",") != strings.Join(subjects, ",") {
			t.Errorf("%s: %v, want %v", c, got[c], subjects)
		}
	}
	for c := range got {
		if want[c] == nil {
			t.Errorf("unexpected %s: %v", c, got[c])
		}
	}
	r := l.Check(n)
	// 0: lost, never, unanswered; 1: once; 2+: twice, differs, ghost.
	if r.Executions != [3]int{3, 1, 3} {
		t.Errorf("executions %v", r.Executions)
	}
}

func TestCheckDeletes(t *testing.T) {
	refused := &Answer{Status: 400, Error: &RPCError{Code: -32602}}
	deleted := &Answer{Status: 200, Result: map[string]any{"structuredContent": map[string]any{"deleted": true}}}
	killed := Attempt{Class: Injected}
	red := func(role, outcome string, a *Answer, attempts ...Attempt) *Redemption {
		h := &History{Final: a, Attempts: append(attempts, Attempt{Class: OK}), SawRetryable: len(attempts) > 0}
		return &Redemption{Role: role, Hist: h, Outcome: outcome}
	}
	flow := func(id, mode string, rs ...*Redemption) *DeleteRecord {
		k := &KeyRecord{Key: "k" + id, Marker: "mk:k" + id + ";", Kind: "delete-target", IDs: []string{id},
			Reqs: []*History{okHistory(answered(id, false))}}
		return &DeleteRecord{Note: k, NoteID: id, Mode: mode, Ask: okHistory(&Answer{}), Redemptions: rs}
	}
	deletes := []*DeleteRecord{
		// Fine: deleted once, the second refused; the note gone.
		flow("a", "after", red("first", "deleted", deleted), red("second", "refused", refused)),
		// Twice: both redemptions deleted.
		flow("b", "concurrent", red("first", "deleted", deleted), red("second", "deleted", deleted)),
		// Answered deleted, the note still there.
		flow("c", "after", red("first", "deleted", deleted), red("second", "refused", refused)),
		// Gone, nothing deleted it, nothing was killed.
		flow("d", "concurrent", red("first", "refused", refused), red("second", "refused", refused)),
		// Gone after the unkeyed second was killed mid-call: unknown, fine.
		flow("e", "concurrent", red("first", "refused", refused), red("second", "refused", refused, killed)),
		// The keyed first, alone, refused after its instance was killed.
		flow("f", "after", red("first", "refused", refused, killed), red("second", "refused", refused)),
	}
	l := &Load{}
	for _, d := range deletes {
		l.deletes = append(l.deletes, d)
		l.keys = append(l.keys, d.Note)
	}
	n := &Notes{ByMarker: map[string][]string{"mk:kc;": {"c"}, "mk:kf;": {"f"}}, IDs: map[string]bool{"c": true, "f": true}}
	got := violations(l, n)
	want := map[string][]string{
		CheckSingleUse: {"delete b (concurrent, key )", "delete c (after, key )", "delete d (concurrent, key )"},
		CheckRecovered: {"delete f (after, key )"},
		// d's note was answered to its add and is gone unexplained.
		CheckExactlyOnce: {"kd"},
		CheckLostWrite:   {"kd"},
	}
	for c, subjects := range want {
		if strings.Join(got[c], ",") != strings.Join(subjects, ",") {
			t.Errorf("%s: %v, want %v", c, got[c], subjects)
		}
	}
	for c := range got {
		if want[c] == nil {
			t.Errorf("unexpected %s: %v", c, got[c])
		}
	}
	if r := l.Check(n); r.DeletesUnknown != 1 || r.DeletesSucceeded != 3 {
		t.Errorf("unknown %d, succeeded %d", r.DeletesUnknown, r.DeletesSucceeded)
	}
}
