package chaos

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/e2e/internal/harness"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
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
func violations(l *Load, n *Notes, killed map[string]int) map[string][]string {
	out := map[string][]string{}
	for _, v := range l.Check(n, killed, nil).Violations {
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
	n := NewNotes()
	n.ByMarker = map[string][]string{"mk:once;": {"n1"}, "mk:twice;": {"n2", "n3"}, "mk:differs;": {"n5", "n6"}, "mk:ghost;": {"n7", "n8"}}
	n.IDs = map[string]bool{"n1": true, "n2": true, "n3": true, "n5": true, "n6": true, "n7": true, "n8": true}
	got := violations(l, n, nil)
	want := map[string][]string{
		CheckExactlyOnce: {"twice", "lost", "differs", "ghost"},
		CheckLostWrite:   {"lost"},
		CheckReplay:      {"differs"},
		CheckRecovered:   {"unanswered"},
	}
	sameViolations(t, got, want)
	r := l.Check(n, nil, nil)
	// 0: lost, never, unanswered; 1: once; 2+: twice, differs, ghost.
	if r.Executions != [3]int{3, 1, 3} {
		t.Errorf("executions %v", r.Executions)
	}
}

func TestCheckDeletes(t *testing.T) {
	refused := &Answer{Status: 400, Error: &harness.RPCError{Code: -32602}}
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
		// Gone, a delete recorded, yet no answer said so and nothing was killed.
		flow("d", "concurrent", red("first", "refused", refused), red("second", "refused", refused)),
		// Gone after the unkeyed second was killed mid-call: unknown, fine.
		flow("e", "concurrent", red("first", "refused", refused), red("second", "refused", refused, killed)),
		// The keyed first, alone, refused after its instance was killed.
		flow("f", "after", red("first", "refused", refused, killed), red("second", "refused", refused)),
		// A double execution at the effect: answered once, deleted twice.
		flow("g", "after", red("first", "deleted", deleted), red("second", "refused", refused)),
		// Gone with no delete recorded: lost.
		flow("h", "concurrent", red("first", "refused", refused), red("second", "refused", refused)),
		// Answered deleted, gone, but no deletion recorded.
		flow("i", "after", red("first", "deleted", deleted), red("second", "refused", refused)),
	}
	l := &Load{}
	for _, d := range deletes {
		l.deletes = append(l.deletes, d)
		l.keys = append(l.keys, d.Note)
	}
	n := NewNotes()
	n.ByMarker = map[string][]string{"mk:kc;": {"c"}, "mk:kf;": {"f"}}
	n.IDs = map[string]bool{"c": true, "f": true}
	n.Deletions = map[string]int{"a": 1, "b": 1, "d": 1, "e": 1, "g": 2}
	got := violations(l, n, nil)
	want := map[string][]string{
		CheckSingleUse: {"delete b (concurrent, key )", "delete c (after, key )", "delete d (concurrent, key )", "delete i (after, key )"},
		CheckRecovered: {"delete f (after, key )"},
		// h's and i's notes were answered to their adds and are gone
		// with no deletion recorded; g's note was deleted twice.
		CheckExactlyOnce: {"kh", "ki", "delete g (after, key )"},
		CheckLostWrite:   {"kh", "ki"},
	}
	sameViolations(t, got, want)
	r := l.Check(n, nil, nil)
	if r.DeletesUnknown != 1 || r.DeletesSucceeded != 5 {
		t.Errorf("unknown %d, succeeded %d", r.DeletesUnknown, r.DeletesSucceeded)
	}
	// 0: c, f, h, i; 1: a, b, d, e; 2+: g.
	if r.DeleteExecutions != [3]int{4, 4, 1} {
		t.Errorf("delete executions %v", r.DeleteExecutions)
	}
}

func TestCheckTasks(t *testing.T) {
	// task is a key whose creates were answered ids and whose last
	// tasks/get said status.
	task := func(key, kind, status string, cancel bool, ids ...string) *TaskKey {
		k := &TaskKey{Key: key, Kind: kind, Status: status}
		for _, id := range ids {
			k.IDs = append(k.IDs, id)
			k.Creates = append(k.Creates, okHistory(&Answer{Status: 200, Result: map[string]any{"resultType": "task", "taskId": id}}))
		}
		res := map[string]any{"status": status}
		switch status {
		case "completed":
			res["result"] = map[string]any{"structuredContent": map[string]any{"notes": 0}}
		case "failed":
			res["error"] = map[string]any{"code": -32603}
		}
		k.Final = &Answer{Status: 200, Result: res}
		k.Polls = []*History{okHistory(k.Final)}
		if cancel {
			k.Cancel = okHistory(&Answer{Status: 200, Result: map[string]any{"resultType": "complete"}})
		}
		return k
	}
	// titled is a completed task whose export asked for its title, was
	// answered title, and exported md.
	titled := func(key, title, md string) *TaskKey {
		k := task(key, "task", "completed", false, "X"+key)
		k.Title = title
		k.Updates = []*History{okHistory(&Answer{Status: 200, Result: map[string]any{"resultType": "complete"}})}
		k.Final.Result["result"] = map[string]any{"structuredContent": map[string]any{"markdown": md + "\n## n1\n"}}
		return k
	}
	l := &Load{tasks: []*TaskKey{
		task("once", "task", "completed", false, "T1"),
		task("twice", "task", "completed", false, "T2"),  // a planted double execution
		task("killed", "task", "completed", false, "T3"), // ran twice, its worker killed once: fine
		task("two", "task-dup-concurrent", "completed", false, "T4", "U4"),
		task("cancelled", "task", "cancelled", true, "T5"),
		task("uncalled", "task", "cancelled", false, "T6"), // cancelled though nobody cancelled it
		task("failed", "task", "failed", false, "T7"),
		task("working", "task", "working", false, "T8"),
		task("norun", "task", "completed", false, "T9"),    // completed, no run recorded
		task("missing", "task", "completed", false, "T10"), // not in the table
		task("resent", "task-resend", "completed", false, "T11", "T11", "T11"),
		{Key: "unanswered", Kind: "task", Creates: []*History{{What: "x"}}}, // given up
		titled("titled", "title titled", "# title titled\n"),
		titled("untitled", "title untitled", "# Notes\n"), // completed without the answer's title
		titled("stuck", "title stuck", "# title stuck\n"),
	}}
	l.tasks[len(l.tasks)-1].Updates = append(l.tasks[len(l.tasks)-1].Updates, &History{What: "tasks/update"}) // an update given up
	n := NewNotes()
	for key, ids := range map[string][]string{"once": {"T1"}, "twice": {"T2"}, "killed": {"T3"}, "two": {"T4", "U4"}, "cancelled": {"T5"},
		"uncalled": {"T6"}, "failed": {"T7"}, "working": {"T8"}, "norun": {"T9"}, "resent": {"T11"},
		"titled": {"Xtitled"}, "untitled": {"Xuntitled"}, "stuck": {"Xstuck"}} {
		for _, id := range ids {
			n.Tasks[id] = &TaskItem{ID: id, Key: key, Status: "completed"}
		}
	}
	// "two" made two tasks and both ran: the key's export ran twice.
	n.ExportRuns = map[string]int{"T1": 1, "T2": 2, "T3": 2, "T4": 1, "U4": 1, "T6": 1, "T10": 1, "T11": 1, "Xtitled": 1, "Xuntitled": 1, "Xstuck": 1}
	killed := map[string]int{"T3": 1}
	got := violations(l, n, killed)
	want := map[string][]string{
		CheckExactlyOnce: {"task key twice", "task key two", "task key norun"},
		CheckTaskPerKey:  {"task key two", "task key two"},
		CheckTaskEnd:     {"task key uncalled", "task key failed", "task key working"},
		CheckLostWrite:   {"task key missing"},
		CheckRecovered:   {"task key unanswered", "task key stuck"},
		CheckUnexpected:  {"task key untitled"},
	}
	sameViolations(t, got, want)
	r := l.Check(n, killed, nil)
	if r.TasksAsked != 3 || r.TaskUpdates != 4 {
		t.Errorf("asked %d, updates %d", r.TasksAsked, r.TaskUpdates)
	}
	// By key: 0: cancelled, failed, working, norun, unanswered; 1: once,
	// uncalled, missing, resent, titled, untitled, stuck; 2+: twice,
	// killed, two.
	if r.TaskExecutions != [3]int{5, 7, 3} || r.TaskReruns != 1 || r.TasksKilled != 1 || r.TasksCreated != 14 {
		t.Errorf("executions %v, reruns %d, killed %d, created %d", r.TaskExecutions, r.TaskReruns, r.TasksKilled, r.TasksCreated)
	}
	if r.TaskEnds["completed"] != 10 || r.TaskEnds["cancelled"] != 2 || r.TaskEnds["failed"] != 1 || r.TaskEnds[""] != 1 {
		t.Errorf("ends %v", r.TaskEnds)
	}
}

// TestTaskItem: a task item is read from its attributes, or from the
// record's JSON in body.
func TestTaskItem(t *testing.T) {
	attrs := map[string]types.AttributeValue{
		"status": &types.AttributeValueMemberS{Value: "completed"}, "principal": &types.AttributeValueMemberS{Value: "authorizer:p"},
		"idempotency_key": &types.AttributeValueMemberS{Value: "k1"}, "attempts": &types.AttributeValueMemberN{Value: "2"},
	}
	if got := taskItem("T", attrs); got == nil || *got != (TaskItem{ID: "T", Status: "completed", Principal: "authorizer:p", Key: "k1", Attempts: 2}) {
		t.Errorf("attributes: %+v", got)
	}
	body := map[string]types.AttributeValue{"body": &types.AttributeValueMemberB{Value: []byte(`{"status":"working","principal":"p","idempotencyKey":"k2","attempts":1}`)}}
	if got := taskItem("U", body); got == nil || *got != (TaskItem{ID: "U", Status: "working", Principal: "p", Key: "k2", Attempts: 1}) {
		t.Errorf("body: %+v", got)
	}
	if got := taskItem("V", map[string]types.AttributeValue{}); got != nil {
		t.Errorf("empty: %+v", got)
	}
}

// sameViolations compares the violations found, by check, with want.
func sameViolations(t *testing.T, got, want map[string][]string) {
	t.Helper()
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
}

// capture is a DynamoDB stand-in that records each request's body and
// answers it as applied.
func capture(t *testing.T) (*dynamodb.Client, func() []byte) {
	var mu sync.Mutex
	var last []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = b
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("x", "x", ""), RetryMaxAttempts: 1})
	return c, func() []byte { mu.Lock(); defer mu.Unlock(); return last }
}

// TestWritesSeesHowAddsCommit: the proxy's record tells a note committed
// in one step (the claim put as completed in its transaction: the bytes
// the claims store sends) from one committed with a claim taken first.
func TestWritesSeesHowAddsCommit(t *testing.T) {
	c, last := capture(t)
	store := claims.NewDynamoDBWith(c, "t", claims.DynamoDBOptions{SortKey: "sk"})
	note := func(m string) claims.Write {
		return claims.Write{Item: &types.TransactWriteItem{Put: &types.Put{TableName: aws.String("t"), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "notes#x"}, "sk": &types.AttributeValueMemberS{Value: "n1"},
			"text": &types.AttributeValueMemberS{Value: "chaos note " + m}}}}}
	}
	ctx, now := context.Background(), time.Now()
	if err := store.Commit(ctx, "0123456789abcdef0123456789abcdef", claims.Claim{Key: "claim#a", Owner: "o", Fingerprint: "f", ExpiresAt: now.Add(time.Hour)},
		[]byte(`{}`), false, []claims.Write{note("mk:one;")}, now); err != nil {
		t.Fatal(err)
	}
	w := NewWrites()
	oneStep := last()
	if !IsOneStepCommit(oneStep) {
		t.Errorf("not seen as a one-step commit: %s", oneStep)
	}
	w.Watch("TransactWriteItems", "i0", oneStep)
	if err := store.CompleteWith(ctx, "0123456789abcdef0123456789abcdee", []claims.Completion{{Key: "claim#b", Owner: "o", Response: []byte(`{}`), ExpiresAt: now}},
		[]types.TransactWriteItem{*note("mk:two;").Item}); err != nil {
		t.Fatal(err)
	}
	claimFirst := last()
	if IsOneStepCommit(claimFirst) {
		t.Errorf("a claim-first completion seen as a one-step commit: %s", claimFirst)
	}
	w.Watch("TransactWriteItems", "i0", claimFirst)
	w.Watch("PutItem", "i0", oneStep) // not a transaction
	if a, b := w.Count("mk:one;"); a != 1 || b != 0 {
		t.Errorf("one-step note: %d one-step, %d claim-first", a, b)
	}
	if a, b := w.Count("mk:two;"); a != 0 || b != 1 {
		t.Errorf("claim-first note: %d one-step, %d claim-first", a, b)
	}

	key := func(name, id string) *KeyRecord {
		return &KeyRecord{Key: name, Marker: "mk:" + name + ";", Kind: "add", IDs: []string{id}, Reqs: []*History{okHistory(answered(id, false))}}
	}
	l := &Load{keys: []*KeyRecord{key("one", "n1"), key("two", "n2"), key("none", "n3")}}
	n := NewNotes()
	n.ByMarker = map[string][]string{"mk:one;": {"n1"}, "mk:two;": {"n2"}, "mk:none;": {"n3"}}
	n.IDs = map[string]bool{"n1": true, "n2": true, "n3": true}
	n.Books = map[string]int{"notes#x": 3, "notes#y": 1}
	n.Counted = map[string]int{"notes#x": 3, "notes#y": 2, "notes#z": 1}
	got := map[string][]string{}
	r := l.Check(n, nil, w)
	for _, v := range r.Violations {
		got[v.Check] = append(got[v.Check], v.Subject)
	}
	sameViolations(t, got, map[string][]string{CheckOneRequest: {"two", "none"}, CheckCount: {"notes#y", "notes#z"}})
	if r.KeysOneStep != 1 || r.OneStepCommits != 1 || r.ClaimFirstCommits != 1 || r.Books != 3 || r.BooksCounted != 1 {
		t.Errorf("%+v", r)
	}
}
