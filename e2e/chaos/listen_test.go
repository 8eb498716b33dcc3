package chaos

import (
	"testing"
	"time"
)

// stream is a listen stream's messages as the function writes them: the
// acknowledgement of acked, an update of each of updated, and the result,
// each carrying subscription id id.
func stream(id int64, acked []string, updated ...string) []map[string]any {
	meta := map[string]any{"io.modelcontextprotocol/subscriptionId": float64(id)}
	subs := []any{}
	for _, u := range acked {
		subs = append(subs, u)
	}
	msgs := []map[string]any{{"method": "notifications/subscriptions/acknowledged", "params": map[string]any{
		"_meta": meta, "notifications": map[string]any{"toolsListChanged": true, "resourceSubscriptions": subs}}}}
	for _, u := range updated {
		msgs = append(msgs, map[string]any{"method": "notifications/resources/updated", "params": map[string]any{"_meta": meta, "uri": u}})
	}
	return append(msgs, map[string]any{"result": map[string]any{"_meta": meta}})
}

// TestCheckListens plants what the listen checks must find: a deletion a
// stream acknowledged and outlived without its update, one never learned,
// an update of what was not acknowledged or not deleted, an update sent
// twice, a notification of a kind not asked for, a message without the
// subscription's id.
func TestCheckListens(t *testing.T) {
	s := func(d float64) time.Duration { return time.Duration(d * float64(time.Second)) }
	watch := func(sent, ended float64, asked []string, msgs []map[string]any, id int64, final Class) *Watch {
		x := &Watch{Principal: "p", Asked: asked, Sent: s(sent), Hist: &History{Attempts: []Attempt{{At: s(ended), Class: final}}}}
		if final == OK {
			x.read(msgs, id)
		}
		return x
	}
	u := noteURI
	w1 := watch(0.5, 8, []string{u("a"), u("b"), u("c")}, stream(1, []string{u("a"), u("b"), u("c")}, u("a")), 1, OK)
	w2 := watch(8.2, 9, []string{u("b"), u("c"), u("d")}, nil, 2, Injected) // killed: tells nothing
	w3 := watch(9.1, 17, []string{u("b"), u("c"), u("d")}, stream(3, nil), 3, OK)
	w4msgs := stream(4, []string{u("f"), u("g")}, u("e"), u("f"), u("f"), u("g"))
	w4msgs = append(w4msgs[:1], append([]map[string]any{{"method": "notifications/tools/list_changed", "params": map[string]any{
		"_meta": map[string]any{"io.modelcontextprotocol/subscriptionId": float64(4)}}}}, w4msgs[1:]...)...)
	w4msgs[2]["params"] = map[string]any{"uri": u("e")} // no subscription id
	w4 := watch(20, 28, []string{u("f"), u("g")}, w4msgs, 4, OK)

	deleted := &DeleteRecord{Ask: &History{}}
	note := func(id string, at float64) *Watched {
		return &Watched{ID: id, URI: u(id), Delete: deleted, DeletedAt: s(at)}
	}
	w := &watcher{principal: "p", watches: []*Watch{w1, w2, w3, w4}, notes: []*Watched{
		note("a", 2),   // notified by w1
		note("b", 3),   // w1 acknowledged it and ended 5 s later without its update: missed (w3 then left it out)
		note("c", 7),   // deleted 1 s before w1's end: not owed; w3 left it out
		note("d", 8.5), // asked only by w2, which was killed, and by w3 (sent after: left out) — learned
		note("h", 18),  // deleted after every stream asking for it: never learned
		note("f", 19), note("g", 0),
	}}
	w.notes[6].DeletedAt = 0 // g: not deleted
	for _, x := range w.watches {
		w.learnLocked(x)
	}
	l := &Load{watchers: []*watcher{w}}
	n := NewNotes()
	n.Deletions = map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "f": 1, "h": 1}
	got := violations(l, n, nil)
	sameViolations(t, got, map[string][]string{
		CheckListenMissed:      {u("b"), u("h")},
		CheckListenUnrequested: {"p", "p", u("e"), u("g")},
		CheckListenDuplicate:   {u("f")},
	})
	r := l.Check(n, nil, nil).Listen
	if want := (ListenResult{Streams: 4, Ended: 3, Notifications: 5, Deleted: 6, ByNotification: 2, ByAcknowledgement: 3, Owed: 3}); r != want {
		t.Errorf("counted %+v, want %+v", r, want)
	}
	if w1.Odd != nil || w3.Odd != nil || len(w4.Odd) != 2 {
		t.Errorf("odd messages: %q, %q, %q", w1.Odd, w3.Odd, w4.Odd)
	}
}

// TestCheckChangeRecorded: a note a keyed redemption deleted has one
// event of its change in the log; one deleted without a key may have
// none (a kill between its delete and its event loses it), never two.
func TestCheckChangeRecorded(t *testing.T) {
	deleted := &Answer{Status: 200, Result: map[string]any{"structuredContent": map[string]any{"deleted": true}}}
	flow := func(id, key string, outcome string) *DeleteRecord {
		k := &KeyRecord{Key: "k" + id, Marker: "mk:k" + id + ";", Kind: "delete-target", IDs: []string{id},
			Reqs: []*History{okHistory(answered(id, false))}}
		return &DeleteRecord{Note: k, NoteID: id, Mode: "after", Ask: okHistory(&Answer{}), Redemptions: []*Redemption{
			{Role: "first", Key: key, Outcome: outcome, Hist: okHistory(deleted)},
			{Role: "second", Outcome: "refused", Hist: okHistory(&Answer{Status: 400})},
		}}
	}
	l := &Load{}
	for _, d := range []*DeleteRecord{
		flow("a", "ka", "deleted"),        // one event: fine
		flow("b", "kb", "deleted-replay"), // none: missing
		flow("c", "", "deleted"),          // none, no key: fine
		flow("d", "", "deleted"),          // two: one change recorded twice
	} {
		l.deletes = append(l.deletes, d)
		l.keys = append(l.keys, d.Note)
	}
	n := NewNotes()
	n.Deletions = map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}
	n.Events = map[string]map[string]bool{"resource:" + noteURI("a"): {"e1": true}, "resource:" + noteURI("d"): {"e2": true, "e3": true}}
	got := violations(l, n, nil)
	if want := []string{"delete b (after, key )", "delete d (after, key )"}; len(got[CheckChangeRecorded]) != 2 ||
		got[CheckChangeRecorded][0] != want[0] || got[CheckChangeRecorded][1] != want[1] {
		t.Errorf("%s: %v, want %v", CheckChangeRecorded, got[CheckChangeRecorded], want)
	}
	if r := l.Check(n, nil, nil); r.ChangesRecorded != 2 {
		t.Errorf("recorded %d", r.ChangesRecorded)
	}
}
