package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The checks, in the order the report lists them.
const (
	CheckExactlyOnce = "exactly-once"            // a key pursued to success has exactly one note; no key more than one
	CheckLostWrite   = "acknowledged-write-lost" // a note answered to the client is in the table (unless deleted)
	CheckReplay      = "replay-differs"          // every success answer for a key names the same note
	CheckGateway     = "5xx-or-gateway-error"    // no 5xx and no gateway error but a killed instance's
	CheckRecovered   = "retryable-not-recovered" // a request answered retryable ends in success once faults stop
	CheckSingleUse   = "single-use-state"        // a confirmed state deletes at most once; the note is gone exactly when a delete succeeded
	CheckUnexpected  = "unexpected-answer"       // every definitive answer is one the flow allows
	CheckTaskEnd     = "task-not-completed"      // a task pursued ends completed, or cancelled when it was cancelled
	CheckTaskPerKey  = "task-per-key"            // every answer for a key names the same task; the table holds one task for it
	CheckOneRequest  = "add-not-in-one-request"  // a keyed add commits its claim, note, count and result in one transaction
	CheckCount       = "note-count-differs"      // every note book's count item counts its notes
	// A watcher learns of every deletion of a note it listens to; a
	// stream sends only what it acknowledged, and each update once.
	CheckListenMissed      = "listen-event-missed"
	CheckListenUnrequested = "listen-unrequested"
	CheckListenDuplicate   = "listen-duplicate"
	// A note deleted by a keyed redemption has its change recorded in the
	// event log once, whatever was killed or lost.
	CheckChangeRecorded = "change-not-recorded"
)

// Checks lists every check.
var Checks = []string{CheckExactlyOnce, CheckLostWrite, CheckReplay, CheckGateway, CheckRecovered, CheckSingleUse, CheckUnexpected,
	CheckTaskEnd, CheckTaskPerKey, CheckOneRequest, CheckCount, CheckChangeRecorded, CheckListenMissed, CheckListenUnrequested, CheckListenDuplicate}

// Violation is one failed check, with what explains it.
type Violation struct {
	Check   string
	Subject string // the key, note or request
	Detail  string
	// Attempts are the HTTP exchanges involved, whose request ids find
	// the instances' log lines.
	Attempts []Attempt
}

// Notes is what the table holds, read directly (not through the fault
// proxy): the note book, the effects' execution records, the tasks.
type Notes struct {
	// ByMarker are the note ids whose text carries each marker.
	ByMarker map[string][]string
	// IDs is every note id.
	IDs map[string]bool
	// Deletions counts each note's deletions, from its deletion record
	// (sk "#deleted#<id>", deletes N).
	Deletions map[string]int
	// ExportRuns counts each task's completed export runs, from its
	// record (sk "#export#<task id>", runs SS).
	ExportRuns map[string]int
	// Tasks are the task items, by task id.
	Tasks map[string]*TaskItem
	// Books counts the note items of each note book (by partition key);
	// Counted is what each book's count item (sk "#count", notes N)
	// says, for the books that have one.
	Books, Counted map[string]int
	// Events counts the distinct events of each topic in the event log
	// (pk "event#…", topic S, id S): the listen streams' changes.
	Events map[string]map[string]bool
}

// TaskItem is one task item of the table: pk "task#<id>", its fields as
// attributes (status S, principal S, idempotency_key S, attempts N);
// an item that holds the record as one JSON attribute (body B) is read
// from that.
type TaskItem struct {
	ID, Status, Principal, Key string
	Attempts                   int
}

// NewNotes returns an empty table's contents.
func NewNotes() *Notes {
	return &Notes{ByMarker: map[string][]string{}, IDs: map[string]bool{}, Deletions: map[string]int{}, ExportRuns: map[string]int{},
		Tasks: map[string]*TaskItem{}, Books: map[string]int{}, Counted: map[string]int{}, Events: map[string]map[string]bool{}}
}

// ScanNotes reads every item of the table with consistent reads.
func ScanNotes(ctx context.Context, c *dynamodb.Client, table string) (*Notes, error) {
	n := NewNotes()
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("chaos: scanning %s: %w", table, err)
		}
		for _, it := range page.Items {
			pk, _ := it["pk"].(*types.AttributeValueMemberS)
			sk, _ := it["sk"].(*types.AttributeValueMemberS)
			if pk != nil && strings.HasPrefix(pk.Value, "event#") {
				topic, _ := it["topic"].(*types.AttributeValueMemberS)
				id, _ := it["id"].(*types.AttributeValueMemberS)
				if topic != nil && id != nil {
					if n.Events[topic.Value] == nil {
						n.Events[topic.Value] = map[string]bool{}
					}
					n.Events[topic.Value][id.Value] = true
				}
				continue
			}
			if pk != nil && strings.HasPrefix(pk.Value, "task#") {
				if t := taskItem(strings.TrimPrefix(pk.Value, "task#"), it); t != nil {
					n.Tasks[t.ID] = t
				}
				continue
			}
			if pk != nil && sk != nil && strings.HasPrefix(pk.Value, "notes#") {
				if id, ok := strings.CutPrefix(sk.Value, "#deleted#"); ok {
					n.Deletions[id] = int(numberAttr(it, "deletes"))
					continue
				}
				if sk.Value == "#count" {
					n.Counted[pk.Value] = int(numberAttr(it, "notes"))
					continue
				}
				if id, ok := strings.CutPrefix(sk.Value, "#export#"); ok {
					if runs, ok := it["runs"].(*types.AttributeValueMemberSS); ok {
						n.ExportRuns[id] = len(runs.Value)
					}
					continue
				}
			}
			if pk == nil || sk == nil || !strings.HasPrefix(pk.Value, "notes#") || !strings.HasPrefix(sk.Value, "n") {
				continue // claims, redemptions, counters
			}
			n.IDs[sk.Value] = true
			n.Books[pk.Value]++
			if text, ok := it["text"].(*types.AttributeValueMemberS); ok {
				if m := marker(text.Value); m != "" {
					n.ByMarker[m] = append(n.ByMarker[m], sk.Value)
				}
			}
		}
	}
	return n, nil
}

// taskItem reads a task item, or nil for one it cannot read.
func taskItem(id string, it map[string]types.AttributeValue) *TaskItem {
	str := func(name string) string {
		v, _ := it[name].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	if st := str("status"); st != "" {
		return &TaskItem{ID: id, Status: st, Principal: str("principal"), Key: str("idempotency_key"), Attempts: int(numberAttr(it, "attempts"))}
	}
	body, _ := it["body"].(*types.AttributeValueMemberB)
	if body == nil {
		return nil
	}
	var rec struct {
		Status    string `json:"status"`
		Principal string `json:"principal"`
		Key       string `json:"idempotencyKey"`
		Attempts  int    `json:"attempts"`
	}
	if json.Unmarshal(body.Value, &rec) != nil {
		return nil
	}
	return &TaskItem{ID: id, Status: rec.Status, Principal: rec.Principal, Key: rec.Key, Attempts: rec.Attempts}
}

// numberAttr reads an integer attribute; 0 when absent.
func numberAttr(it map[string]types.AttributeValue, name string) int64 {
	v, _ := it[name].(*types.AttributeValueMemberN)
	if v == nil {
		return 0
	}
	n, _ := strconv.ParseInt(v.Value, 10, 64)
	return n
}

// marker is the "mk:<key>;" a note's text carries.
func marker(text string) string {
	i := strings.Index(text, "mk:")
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(text[i:], ';')
	if j < 0 {
		return ""
	}
	return text[i : i+j+1]
}

// Result is the checks' outcome.
type Result struct {
	Violations []Violation
	// Executions counts keys by how many notes they made: 0, 1, 2+.
	Executions [3]int
	// Keys by kind, and how many were pursued to success.
	Keys, KeysSucceeded int
	KeysByKind          map[string]int
	// OneStepCommits and ClaimFirstCommits count the transactions that
	// carried a key's note (every attempt), by how they held its claim
	// (Writes); KeysOneStep the keys pursued to success whose note was
	// committed in one step.
	OneStepCommits, ClaimFirstCommits, KeysOneStep int
	// Books are the note books in the table; BooksCounted those whose
	// count item counts their notes.
	Books, BooksCounted int
	// Deletes are the confirmed delete flows; SecondRefused the second
	// redemptions refused as spent.
	Deletes, DeletesSucceeded, SecondRefused int
	// DeletesUnknown are deletes whose note is gone though no answer
	// said so: a redemption was killed mid-call and nothing it was
	// answered since tells whether it ran (its deletion record does).
	DeletesUnknown int
	// DeleteExecutions counts the confirmed deletes' notes by their
	// deletion records: deleted 0, 1, 2+ times.
	DeleteExecutions [3]int
	// ChangesRecorded are the deleted notes whose change is in the event
	// log.
	ChangesRecorded int
	Reads           int
	// Task keys by kind; those answered with a task, and how their
	// tasks ended as tasks/get last told: by status ("" for a task never
	// seen to end).
	TaskKeys, TasksCreated int
	TaskKeysByKind         map[string]int
	// TasksAsked are the task keys whose export asked for its title;
	// TaskUpdates the tasks/update requests that answered it.
	TasksAsked, TaskUpdates int
	TaskEnds                map[string]int
	// TaskExecutions counts the task keys by the runs of the export
	// recorded at its effect, in all the key's tasks: 0, 1, 2+.
	// TasksKilled are keys whose task's worker was killed while it ran
	// it; TaskReruns the runs beyond the first that such kills explain.
	TaskExecutions          [3]int
	TasksKilled, TaskReruns int
	TaskPolls               int
	// Listen is what the listen checks counted.
	Listen ListenResult
}

// ByCheck counts the violations of each check (every check present).
func (r *Result) ByCheck() map[string]int {
	m := map[string]int{}
	for _, c := range Checks {
		m[c] = 0
	}
	for _, v := range r.Violations {
		m[v.Check]++
	}
	return m
}

// Check checks what the load recorded against the table. killed counts,
// by task id, the kills of an instance while it ran the task's worker
// (Pool.KilledTasks): each allows one more run of the task's handler.
// writes is what the proxy saw of the note writes (nil: not checked).
func (l *Load) Check(notes *Notes, killed map[string]int, writes *Writes) *Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &Result{KeysByKind: map[string]int{}, TaskKeysByKind: map[string]int{}, TaskEnds: map[string]int{}}
	add := func(check, subject, detail string, hs ...*History) {
		v := Violation{Check: check, Subject: subject, Detail: detail}
		for _, h := range hs {
			if h != nil {
				v.Attempts = append(v.Attempts, h.Attempts...)
			}
		}
		r.Violations = append(r.Violations, v)
	}

	// Notes a delete removed, by the key that added them, as their
	// deletion records say: a note gone that way was deleted, not lost.
	gone := map[*KeyRecord]map[string]bool{}
	for _, d := range l.deletes {
		if notes.Deletions[d.NoteID] > 0 {
			if gone[d.Note] == nil {
				gone[d.Note] = map[string]bool{}
			}
			gone[d.Note][d.NoteID] = true
		}
	}

	for _, k := range l.keys {
		k.mu.Lock()
		r.Keys++
		r.KeysByKind[k.Kind]++
		succeeded := len(k.IDs) > 0
		if succeeded {
			r.KeysSucceeded++
		}
		executed := map[string]bool{}
		for _, id := range notes.ByMarker[k.Marker] {
			executed[id] = true
		}
		for id := range gone[k] {
			if slices.Contains(k.IDs, id) {
				executed[id] = true
			}
		}
		r.Executions[min(len(executed), 2)]++
		switch {
		case succeeded && len(executed) != 1, len(executed) > 1:
			add(CheckExactlyOnce, k.Key, fmt.Sprintf("%s key executed %d times: notes %v in the table, answered %v, deleted %v",
				k.Kind, len(executed), notes.ByMarker[k.Marker], k.IDs, keys(gone[k])), k.Reqs...)
		}
		if distinct := slices.Compact(slices.Sorted(slices.Values(k.IDs))); len(distinct) > 1 {
			add(CheckReplay, k.Key, fmt.Sprintf("answers name notes %v (%d replays)", k.IDs, k.Replays), k.Reqs...)
		}
		for _, id := range slices.Compact(slices.Sorted(slices.Values(k.IDs))) {
			if !notes.IDs[id] && !gone[k][id] {
				add(CheckLostWrite, k.Key, fmt.Sprintf("note %s was answered but is not in the table", id), k.Reqs...)
			}
		}
		for _, u := range k.Unexpected {
			add(CheckUnexpected, k.Key, "notes_add answered "+u, k.Reqs...)
		}
		for _, h := range k.Reqs {
			if h.Final == nil {
				add(CheckRecovered, k.Key, fmt.Sprintf("notes_add given up after %d attempts, last %s", len(h.Attempts), last(h)), h)
			}
		}
		if writes != nil {
			// notes_add has no effect but its enlisted writes: its keyed
			// call commits the claim, the note, its count and the result
			// in one transaction, and never claims its key first.
			oneStep, claimFirst := writes.Count(k.Marker)
			r.OneStepCommits += oneStep
			r.ClaimFirstCommits += claimFirst
			switch {
			case claimFirst > 0:
				add(CheckOneRequest, k.Key, fmt.Sprintf("%d transactions completed a claim taken first with the key's note (%d one-step)", claimFirst, oneStep), k.Reqs...)
			case succeeded && oneStep == 0:
				add(CheckOneRequest, k.Key, "the key's note was answered, but no one-step commit carried it", k.Reqs...)
			case succeeded:
				r.KeysOneStep++
			}
		}
		k.mu.Unlock()
	}

	// Each note book's count item counts its notes: an add's count and
	// note, a delete's count and removal, are written together, whatever
	// failed.
	for _, book := range slices.Sorted(maps.Keys(setOf(slices.Collect(maps.Keys(notes.Books)), slices.Collect(maps.Keys(notes.Counted))))) {
		r.Books++
		if notes.Counted[book] == notes.Books[book] {
			r.BooksCounted++
			continue
		}
		add(CheckCount, book, fmt.Sprintf("the book holds %d notes, its count item says %d", notes.Books[book], notes.Counted[book]))
	}

	for _, h := range l.reads {
		r.Reads++
		if h.Final == nil {
			add(CheckRecovered, h.What, fmt.Sprintf("read given up after %d attempts, last %s", len(h.Attempts), last(h)), h)
		}
	}
	for _, u := range l.readBad {
		add(CheckUnexpected, "read", u)
	}
	for _, g := range l.gateway {
		add(CheckGateway, "request", g)
	}

	for _, d := range l.deletes {
		r.Deletes++
		subject := fmt.Sprintf("delete %s (%s, key %s)", d.NoteID, d.Mode, d.Key)
		hs := []*History{d.Ask}
		for _, rd := range d.Redemptions {
			hs = append(hs, rd.Hist)
		}
		for _, u := range d.Unexpected {
			add(CheckUnexpected, subject, u, hs...)
		}
		if d.Ask != nil && d.Ask.Final == nil {
			add(CheckRecovered, subject, fmt.Sprintf("the first round given up after %d attempts, last %s", len(d.Ask.Attempts), last(d.Ask)), d.Ask)
		}
		if len(d.Redemptions) == 0 {
			if notes.IDs[d.NoteID] || d.Ask == nil || d.Ask.Final == nil {
				continue // never confirmed: the note stays
			}
			add(CheckSingleUse, subject, "the note is gone, but no confirmation was sent", hs...)
			continue
		}
		executions, success := 0, d.succeeded()
		var outcomes []string
		for _, rd := range d.Redemptions {
			outcomes = append(outcomes, rd.Role+"="+rd.Outcome)
			if rd.Executed() {
				executions++
			}
		}
		if success {
			r.DeletesSucceeded++
		}
		summary := strings.Join(outcomes, " ")
		if executions > 1 {
			add(CheckSingleUse, subject, fmt.Sprintf("the state was redeemed %d times: %s", executions, summary), hs...)
		}
		// The delete's effect, counted where it happened.
		deleted := notes.Deletions[d.NoteID]
		r.DeleteExecutions[min(deleted, 2)]++
		if deleted > 1 {
			add(CheckExactlyOnce, subject, fmt.Sprintf("the note's deletion record counts %d deletes: %s", deleted, summary), hs...)
		}
		switch present := notes.IDs[d.NoteID]; {
		case success && present:
			add(CheckSingleUse, subject, "a delete succeeded but the note is still in the table: "+summary, hs...)
		case success && deleted == 0:
			add(CheckSingleUse, subject, "a delete succeeded and the note is gone, but no deletion is recorded: "+summary, hs...)
		case present && deleted > 0:
			add(CheckSingleUse, subject, fmt.Sprintf("the note is in the table, yet its deletion record counts %d: %s", deleted, summary), hs...)
		case !success && !present && deleted == 0:
			// Gone, and no delete ran: the add's check reports it lost.
		case !success && !present && d.unknown():
			// A redemption was killed mid-call and no retry of it could
			// learn what it did (a call without a key, or one refused
			// since): the note may well be gone. Counted, and the refusal
			// itself is checked below.
			r.DeletesUnknown++
		case !success && !present:
			add(CheckSingleUse, subject, "the note is gone but no delete succeeded: "+summary, hs...)
		}
		// The change: one event for the note, recorded with the delete
		// when a keyed redemption made it (an unkeyed one records it
		// after its call, which a kill in between loses).
		changes := len(notes.Events["resource:"+noteURI(d.NoteID)])
		if changes > 1 || changes == 0 && deleted > 0 && d.keyedSuccess() {
			add(CheckChangeRecorded, subject, fmt.Sprintf("the note was deleted and %d events of its change are in the log: %s", changes, summary), hs...)
		}
		if changes > 0 {
			r.ChangesRecorded++
		}
		first, second := d.Redemptions[0], d.Redemptions[1]
		if second.Outcome == "refused" {
			r.SecondRefused++
		}
		for _, rd := range d.Redemptions {
			switch rd.Outcome {
			case "gave-up":
				add(CheckRecovered, subject, fmt.Sprintf("%s redemption given up after %d attempts, last %s", rd.Role, len(rd.Hist.Attempts), last(rd.Hist)), rd.Hist)
			case "unexpected":
				add(CheckUnexpected, subject, fmt.Sprintf("%s redemption answered %s", rd.Role, rd.Hist.Final.Describe()), rd.Hist)
			}
		}
		// The keyed first redemption may be refused only when the second
		// one held the state beside it (a concurrent one); alone, it must
		// delete. A resend with its key must be a replay.
		if first.Outcome == "refused" && d.Mode != "concurrent" {
			check := CheckUnexpected
			if first.Hist.SawRetryable {
				check = CheckRecovered
			}
			add(check, subject, "the keyed redemption, sent alone, was refused -32602: "+summary, first.Hist)
		}
		if len(d.Redemptions) > 2 && d.Redemptions[2].Outcome == "refused" {
			add(CheckUnexpected, subject, "a resend with the first redemption's key was refused instead of replayed: "+summary, d.Redemptions[2].Hist)
		}
	}
	l.checkTasks(r, notes, killed, add)
	l.checkListens(r, notes, add)
	return r
}

// checkTasks checks the export tasks: one task per key, each ended
// completed (or cancelled, when a cancel was sent), its handler run once
// at its effect, or once more for each kill of a worker running it.
func (l *Load) checkTasks(r *Result, notes *Notes, killed map[string]int, add func(check, subject, detail string, hs ...*History)) {
	byKey := map[string][]*TaskItem{}
	for _, t := range notes.Tasks {
		if t.Key != "" {
			byKey[t.Key] = append(byKey[t.Key], t)
		}
	}
	for _, k := range l.tasks {
		k.mu.Lock()
		r.TaskKeys++
		r.TaskKeysByKind[k.Kind]++
		subject := "task key " + k.Key
		hs := append(append(append(slices.Clone(k.Creates), k.Updates...), k.Polls...), k.Cancel)
		for _, h := range k.Polls {
			if h != nil {
				r.TaskPolls++
			}
		}
		if k.Title != "" {
			r.TasksAsked++
		}
		for _, h := range k.Updates {
			r.TaskUpdates++
			if h.Final == nil {
				add(CheckRecovered, subject, fmt.Sprintf("tasks/update given up after %d attempts, last %s", len(h.Attempts), last(h)), h)
			}
		}
		for _, u := range k.Unexpected {
			add(CheckUnexpected, subject, u, hs...)
		}
		for _, h := range k.Creates {
			if h.Final == nil {
				add(CheckRecovered, subject, fmt.Sprintf("the create given up after %d attempts, last %s", len(h.Attempts), last(h)), h)
			}
		}
		if k.Cancel != nil && k.Cancel.Final == nil {
			add(CheckRecovered, subject, fmt.Sprintf("tasks/cancel given up after %d attempts, last %s", len(k.Cancel.Attempts), last(k.Cancel)), k.Cancel)
		}
		items := byKey[k.Key]
		slices.SortFunc(items, func(a, b *TaskItem) int { return strings.Compare(a.ID, b.ID) })
		var itemIDs []string
		for _, t := range items {
			itemIDs = append(itemIDs, t.ID)
		}
		ids := slices.Compact(slices.Sorted(slices.Values(k.IDs)))
		if len(ids) > 1 {
			add(CheckTaskPerKey, subject, fmt.Sprintf("the answers name %d tasks: %v", len(ids), k.IDs), hs...)
		}
		if len(items) > 1 {
			add(CheckTaskPerKey, subject, fmt.Sprintf("the table holds %d tasks for the key: %v", len(items), itemIDs), hs...)
		}
		// The key's export ran, at its effect, once in all its tasks
		// (one, unless the key made more), plus once for each kill of a
		// worker running one of them.
		runs, kills := 0, 0
		for _, t := range slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(ids), itemIDs...)))) {
			runs += notes.ExportRuns[t]
			kills += killed[t]
		}
		r.TaskExecutions[min(runs, 2)]++
		if kills > 0 {
			r.TasksKilled++
		}
		switch {
		case runs > 1+kills:
			add(CheckExactlyOnce, subject, fmt.Sprintf("the key's export ran %d times at its effect (tasks %v), its workers killed mid-run %d times",
				runs, keys(setOf(ids, itemIDs)), kills), hs...)
		case runs > 1:
			r.TaskReruns += runs - 1
		}
		if len(ids) == 0 {
			k.mu.Unlock()
			continue
		}
		r.TasksCreated++
		id := k.IDs[0]
		if !slices.Contains(itemIDs, id) {
			add(CheckLostWrite, subject, fmt.Sprintf("task %s was answered but the table holds no such task for the key (it holds %v)", id, itemIDs), hs...)
		}
		cancelled := k.Cancel != nil
		status := k.Status
		if !terminal(status) {
			status = ""
		}
		r.TaskEnds[status]++
		switch {
		case status == "completed" && k.Final.Result["result"] == nil:
			add(CheckTaskEnd, subject, fmt.Sprintf("task %s completed without a result: %s", id, k.Final.Describe()), hs...)
		case status == "completed":
			res, _ := k.Final.Result["result"].(map[string]any)
			if res["isError"] == true {
				add(CheckTaskEnd, subject, fmt.Sprintf("task %s completed with a tool error: %v", id, res), hs...)
			}
			sc, _ := res["structuredContent"].(map[string]any)
			if md, _ := sc["markdown"].(string); k.Title != "" && !strings.HasPrefix(md, "# "+k.Title+"\n") {
				add(CheckUnexpected, subject, fmt.Sprintf("task %s's export is not titled as tasks/update answered (%q): %.60q", id, k.Title, md), hs...)
			}
		case status == "cancelled" && cancelled:
		case status == "":
			add(CheckTaskEnd, subject, fmt.Sprintf("task %s did not end: last status %q after %d polls", id, k.Status, len(k.Polls)), hs...)
		default:
			e, _ := json.Marshal(k.Final.Result["error"])
			add(CheckTaskEnd, subject, fmt.Sprintf("task %s ended %s (cancel sent: %v) %s", id, status, cancelled, e), hs...)
		}
		if status == "completed" && notes.ExportRuns[id] == 0 {
			add(CheckExactlyOnce, subject, fmt.Sprintf("task %s completed, but no run of its handler is recorded", id), hs...)
		}
		k.mu.Unlock()
	}
}

// succeeded reports whether some redemption was answered with the
// delete (or its replay).
func (d *DeleteRecord) succeeded() bool {
	for _, rd := range d.Redemptions {
		if rd.Outcome == "deleted" || rd.Outcome == "deleted-replay" {
			return true
		}
	}
	return false
}

// keyedSuccess reports whether a redemption with an idempotency key was
// answered that the note was deleted: that redemption deleted it.
func (d *DeleteRecord) keyedSuccess() bool {
	for _, rd := range d.Redemptions {
		if rd.Key != "" && (rd.Outcome == "deleted" || rd.Outcome == "deleted-replay") {
			return true
		}
	}
	return false
}

// unknown reports whether a redemption that did not succeed had an
// attempt without an answer (its instance killed mid-call, or the
// connection lost): whether that attempt deleted the note, no answer
// tells.
func (d *DeleteRecord) unknown() bool {
	for _, rd := range d.Redemptions {
		if rd.Outcome == "deleted" || rd.Outcome == "deleted-replay" {
			continue
		}
		for _, a := range rd.Hist.Attempts {
			if a.Class == Injected || a.Class == Transport {
				return true
			}
		}
	}
	return false
}

func keys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// setOf is the set of the strings in lists.
func setOf(lists ...[]string) map[string]bool {
	m := map[string]bool{}
	for _, l := range lists {
		for _, s := range l {
			m[s] = true
		}
	}
	return m
}

// last describes a history's last attempt.
func last(h *History) string {
	if len(h.Attempts) == 0 {
		return "none"
	}
	return h.Attempts[len(h.Attempts)-1].Detail
}
