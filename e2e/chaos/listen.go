package chaos

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/serverless-mcp/mcp-lambda/e2e/internal/harness"
)

// The listen streams' part of the run: watchers hold subscriptions/listen
// streams through the streaming door on one instance while their own
// notes are deleted through other instances, so that each deletion
// reaches the stream by the event log in DynamoDB, through the faults.
const (
	// ListenMaxDuration is the fleet's MCP_LISTEN_MAX_DURATION: a stream
	// ends with its result after it, and the watcher listens again. The
	// emulator hands a stream on whole, at its end, so a short stream is
	// what lets the run see its events before the next one opens.
	ListenMaxDuration = 8 * time.Second
	// listenPoll is the fleet's MCP_LISTEN_POLL (the endpoint's default).
	listenPoll = time.Second
	// deliveredWithin is how long before a stream's end a deletion it
	// acknowledged must have been answered for the stream to owe its
	// notification: a read of the log after the event was written (one
	// poll), and the read's own time.
	deliveredWithin = listenPoll + 1500*time.Millisecond
	// maxWatched bounds the notes one stream subscribes to (the server's
	// bound is 16).
	maxWatched = 14
	// deleters are a watcher's deleting loops: each adds two notes, waits
	// for a stream that asks for them and deletes them, so that one
	// stream sees several deletions.
	deleters = 3
)

// Watch is one listen stream a watcher opened: what it asked for, when,
// and what came back.
type Watch struct {
	Principal string
	Asked     []string      // the resource URIs asked for
	Sent      time.Duration // since the load started
	Hist      *History      // its one attempt; Hist.Final the answer
	// Acked are the resource URIs the acknowledgement honoured; Complete
	// says the stream ended with its result.
	Acked    []string
	Complete bool
	// Updated are the URIs of its notifications/resources/updated, in
	// order; Odd the messages the check refuses outright (a notification
	// of another kind, a message without the subscription's id, a
	// message out of place).
	Updated []string
	Odd     []string
}

// ended reports whether the stream ran its course: acknowledged, and
// ended with its result (not cut by a kill, not refused).
func (w *Watch) ended() bool { return w.Complete && w.Acked != nil }

// endedAt is when the stream's answer was read.
func (w *Watch) endedAt() time.Duration {
	if len(w.Hist.Attempts) == 0 {
		return w.Sent
	}
	return w.Hist.Attempts[len(w.Hist.Attempts)-1].At
}

// Watched is one note a watcher listens to: added by a keyed add,
// subscribed to, then deleted by a confirmed delete while a stream is
// open.
type Watched struct {
	Note *KeyRecord
	ID   string
	URI  string
	// Delete is the note's confirmed delete once it ended; DeletedAt
	// when its first success answer was read (0 if none).
	Delete    *DeleteRecord
	DeletedAt time.Duration
	// Learned is how the watcher learned the note is gone: by
	// "notification", or by an "acknowledgement" without it (a listen
	// sent after the deletion's answer); "" not yet.
	Learned string
}

// watcher is one principal's listen streams and the deletions they must
// hear of.
type watcher struct {
	l         *Load
	principal string

	mu      sync.Mutex
	notes   []*Watched
	watches []*Watch
	// asked counts the listens sent; sentCh is closed (and replaced) at
	// each, so that the deleter waits for a stream that asks for its
	// notes.
	asked   map[string]int // URI → the listens that asked for it
	sentCh  chan struct{}
	deleter bool // a deleter still runs
}

// noteURI is the note book's resource URI of a note.
func noteURI(id string) string { return "notes://note/" + id }

// watch runs one watcher until the load ends and every deletion it
// made is learned (or the run stops retrying): deleters add notes, wait
// for a stream that asks for them, and deletes them; a listener listens
// again as soon as each stream ends.
func (l *Load) watch(ctx context.Context, n int) {
	w := &watcher{l: l, principal: fmt.Sprintf("%s-watch%d", l.o.RunID, n), asked: map[string]int{}, sentCh: make(chan struct{}), deleter: true}
	l.mu.Lock()
	l.watchers = append(l.watchers, w)
	l.mu.Unlock()
	var wg sync.WaitGroup
	for range deleters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.deletes(ctx, l.newRand())
		}()
	}
	go func() {
		wg.Wait()
		w.mu.Lock()
		w.deleter = false
		w.mu.Unlock()
	}()
	w.listens(ctx, l.newRand())
	wg.Wait()
}

// deletes adds two notes at a time, waits until a listen asked for them,
// then deletes them after a moment, while the stream is open.
func (w *watcher) deletes(ctx context.Context, rng *rand.Rand) {
	l := w.l
	for l.since() < l.o.Duration && ctx.Err() == nil {
		var batch []*Watched
		for range 2 {
			l.count("notes_add watch-target")
			if k := l.add(ctx, rng, w.principal, "watch-target"); k.Succeeded() {
				k.mu.Lock()
				id := k.IDs[0]
				k.mu.Unlock()
				batch = append(batch, &Watched{Note: k, ID: id, URI: noteURI(id)})
			}
		}
		if len(batch) == 0 {
			continue
		}
		if !w.await(ctx, batch) {
			return
		}
		// The stream is sent; its acknowledgement follows once an instance
		// takes it.
		time.Sleep(300*time.Millisecond + time.Duration(rng.Int64N(int64(1200*time.Millisecond))))
		var wg sync.WaitGroup
		for _, n := range batch {
			wg.Add(1)
			r := l.newRand()
			go func() {
				defer wg.Done()
				l.count("notes_delete watched")
				d := l.confirmDelete(ctx, r, w.principal, n.Note)
				w.mu.Lock()
				n.Delete, n.DeletedAt = d, deletedAt(d)
				w.mu.Unlock()
			}()
		}
		wg.Wait()
	}
}

// await adds batch to the watched notes and waits until a listen asking
// for them was sent (false: the run is ending).
func (w *watcher) await(ctx context.Context, batch []*Watched) bool {
	for {
		w.mu.Lock()
		if w.pendingLocked() <= maxWatched-len(batch) {
			w.notes = append(w.notes, batch...)
			w.mu.Unlock()
			break
		}
		ch := w.sentCh
		w.mu.Unlock()
		if !w.wait(ctx, ch) {
			return false
		}
	}
	for {
		w.mu.Lock()
		asked := true
		for _, n := range batch {
			asked = asked && w.asked[n.URI] > 0
		}
		ch := w.sentCh
		w.mu.Unlock()
		if asked {
			return true
		}
		if !w.wait(ctx, ch) {
			return false
		}
	}
}

// wait waits for the next listen to be sent, at most a stream's length
// and a bit.
func (w *watcher) wait(ctx context.Context, ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	case <-time.After(ListenMaxDuration + 20*time.Second):
		return w.l.since() < w.l.o.Duration
	}
}

// pendingLocked counts the watched notes not yet learned gone.
func (w *watcher) pendingLocked() int {
	n := 0
	for _, x := range w.notes {
		if x.Learned == "" {
			n++
		}
	}
	return n
}

// IsWatchedDelete reports whether a TransactWriteItems's body deletes a
// note a watcher listens to, by a keyed call: it records the deletion of
// one of their notes (sk "#deleted#<id>") with a claim's completion. The
// faults kill the instance that sent it (Faults.WatchedDelete).
func (l *Load) IsWatchedDelete(body []byte) bool {
	if !bytes.Contains(body, []byte(`"#deleted#`)) || !bytes.Contains(body, []byte(`"claim#`)) {
		return false
	}
	l.mu.Lock()
	ws := slices.Clone(l.watchers)
	l.mu.Unlock()
	for _, w := range ws {
		w.mu.Lock()
		for _, n := range w.notes {
			if bytes.Contains(body, []byte(`"#deleted#`+n.ID+`"`)) {
				w.mu.Unlock()
				return true
			}
		}
		w.mu.Unlock()
	}
	return false
}

// deletedAt is when the first answer that the note was deleted (a run or
// its replay) was read, or 0.
func deletedAt(d *DeleteRecord) time.Duration {
	var at time.Duration
	for _, rd := range d.Redemptions {
		if rd.Outcome != "deleted" && rd.Outcome != "deleted-replay" || len(rd.Hist.Attempts) == 0 {
			continue
		}
		if t := rd.Hist.Attempts[len(rd.Hist.Attempts)-1].At; at == 0 || t < at {
			at = t
		}
	}
	return at
}

// listens listens again as each stream ends, until the load is over, the
// deleter done, and every note it deleted learned gone (or the run stops
// retrying).
func (w *watcher) listens(ctx context.Context, rng *rand.Rand) {
	l := w.l
	for ctx.Err() == nil && time.Now().Before(l.end()) {
		w.mu.Lock()
		if l.since() >= l.o.Duration && !w.deleter && !w.unlearnedLocked() {
			w.mu.Unlock()
			return
		}
		var asked []string
		for _, n := range w.notes {
			if n.Learned == "" {
				asked = append(asked, n.URI)
			}
		}
		for _, u := range asked {
			w.asked[u]++
		}
		ch := w.sentCh
		w.sentCh = make(chan struct{})
		w.mu.Unlock()
		close(ch)

		x := w.listen(ctx, asked)
		w.mu.Lock()
		w.watches = append(w.watches, x)
		w.learnLocked(x)
		w.mu.Unlock()
		if !x.ended() {
			// Cut (a kill), refused (the stream quota) or not answered:
			// listen again after a moment.
			time.Sleep(200*time.Millisecond + time.Duration(rng.Int64N(int64(300*time.Millisecond))))
		}
	}
}

// unlearnedLocked reports whether a note deleted (as an answer said) is
// not yet learned gone.
func (w *watcher) unlearnedLocked() bool {
	for _, n := range w.notes {
		if n.Learned == "" && (n.DeletedAt > 0 || n.Delete == nil) {
			return true
		}
	}
	return false
}

// listen sends one subscriptions/listen through the streaming door and
// reads its stream.
func (w *watcher) listen(ctx context.Context, asked []string) *Watch {
	l := w.l
	l.count("subscriptions/listen")
	x := &Watch{Principal: w.principal, Asked: asked, Sent: l.since(),
		Hist: &History{What: fmt.Sprintf("subscriptions/listen %s %v (streaming door)", w.principal, asked)}}
	subs := asked
	if subs == nil {
		subs = []string{}
	}
	a := l.send(ctx, Call{Principal: w.principal, Method: "subscriptions/listen", Stream: true, KeepDoor: true,
		Params: map[string]any{"notifications": map[string]any{"toolsListChanged": true, "resourceSubscriptions": subs}}}, x.Hist)
	if a.Classify() != OK {
		x.Hist.Final = a
		if !a.Classify().Retryable() {
			x.Odd = append(x.Odd, "listen answered "+a.Describe())
		}
		return x
	}
	x.Hist.Final = a
	x.read(harness.Messages(a.Body), a.ID)
	return x
}

// read reads a stream's messages: the acknowledgement first, then
// notifications, then the result, each carrying the subscription id.
func (x *Watch) read(msgs []map[string]any, id int64) {
	for i, m := range msgs {
		method, _ := m["method"].(string)
		var meta map[string]any
		if p, ok := m["params"].(map[string]any); ok {
			meta, _ = p["_meta"].(map[string]any)
		} else if r, ok := m["result"].(map[string]any); ok {
			meta, _ = r["_meta"].(map[string]any)
		}
		if sub, _ := meta["io.modelcontextprotocol/subscriptionId"].(float64); int64(sub) != id {
			x.Odd = append(x.Odd, fmt.Sprintf("message %d has subscription id %v, not %d: %.200v", i, meta["io.modelcontextprotocol/subscriptionId"], id, m))
		}
		p, _ := m["params"].(map[string]any)
		switch {
		case i == 0 && method == "notifications/subscriptions/acknowledged":
			n, _ := p["notifications"].(map[string]any)
			subs, _ := n["resourceSubscriptions"].([]any)
			x.Acked = []string{}
			for _, s := range subs {
				if u, ok := s.(string); ok {
					x.Acked = append(x.Acked, u)
				}
			}
			if n["toolsListChanged"] != true {
				x.Odd = append(x.Odd, fmt.Sprintf("the acknowledgement leaves out toolsListChanged: %v", n))
			}
		case i == len(msgs)-1 && m["result"] != nil:
			x.Complete = true
		case i > 0 && method == "notifications/resources/updated":
			u, _ := p["uri"].(string)
			x.Updated = append(x.Updated, u)
		default:
			x.Odd = append(x.Odd, fmt.Sprintf("message %d out of place: %.200v", i, m))
		}
	}
}

// learnLocked marks what the stream told: a note it was notified of is
// learned gone; so is one its acknowledgement left out although it was
// asked for, when the deletion had been answered before the listen was
// sent (a note that could not be read for another reason, a read that
// failed, is asked for again).
func (w *watcher) learnLocked(x *Watch) {
	if !x.ended() {
		return
	}
	for _, n := range w.notes {
		switch {
		case n.Learned != "":
		case slices.Contains(x.Updated, n.URI):
			n.Learned = "notification"
		case slices.Contains(x.Asked, n.URI) && !slices.Contains(x.Acked, n.URI) && n.DeletedAt > 0 && n.DeletedAt < x.Sent:
			n.Learned = "acknowledgement"
		}
	}
}

// ListenResult is what the listen checks counted.
type ListenResult struct {
	Streams, Ended, Notifications int
	// Watched notes deleted; learned by a notification, by an
	// acknowledgement that left them out; Owed are the deletions a
	// stream that acknowledged the note was open long enough to deliver
	// (deliveredWithin), all of which must have been.
	Deleted, ByNotification, ByAcknowledgement, Owed int
	// CutDeletes are the deletions one of whose redemptions had its
	// instance killed under it (the kill right after a watched note's
	// delete was applied among them); CutOwed of them a stream owed.
	CutDeletes, CutOwed int
}

// checkListens checks the watchers' streams against the table: every
// deletion of a watched note reached the watcher (by a notification in a
// stream that acknowledged the note and was open long enough after the
// deletion, or else by a later acknowledgement that left the note out),
// and no stream sent what was not asked for, or a note's deletion twice,
// or a deletion that did not happen. Called with l.mu held.
func (l *Load) checkListens(r *Result, notes *Notes, add func(check, subject, detail string, hs ...*History)) {
	lr := &r.Listen
	for _, w := range l.watchers {
		w.mu.Lock()
		for _, x := range w.watches {
			lr.Streams++
			if x.ended() {
				lr.Ended++
			}
			lr.Notifications += len(x.Updated)
			for _, o := range x.Odd {
				add(CheckListenUnrequested, w.principal, o, x.Hist)
			}
			seen := map[string]bool{}
			for _, u := range x.Updated {
				id, _ := strings.CutPrefix(u, "notes://note/")
				switch {
				case seen[u]:
					add(CheckListenDuplicate, u, "a stream sent the note's update twice", x.Hist)
				case !slices.Contains(x.Acked, u):
					add(CheckListenUnrequested, u, fmt.Sprintf("a stream that acknowledged %v sent an update of %s", x.Acked, u), x.Hist)
				case notes.Deletions[id] == 0:
					add(CheckListenUnrequested, u, "an update of a note that no delete removed", x.Hist)
				}
				seen[u] = true
			}
		}
		for _, n := range w.notes {
			if n.DeletedAt == 0 {
				continue
			}
			lr.Deleted++
			cut := n.Delete.cut()
			if cut {
				lr.CutDeletes++
			}
			switch n.Learned {
			case "notification":
				lr.ByNotification++
			case "acknowledgement":
				lr.ByAcknowledgement++
			default:
				add(CheckListenMissed, n.URI, fmt.Sprintf("deleted (answered at t=%s) and never learned by the watcher", n.DeletedAt.Round(time.Millisecond)),
					append([]*History{}, n.Delete.Ask)...)
			}
			// The stream that owed it: open when the note was deleted, and
			// long enough after.
			for _, x := range w.watches {
				if !x.ended() || !slices.Contains(x.Acked, n.URI) || x.endedAt()-n.DeletedAt < deliveredWithin {
					continue
				}
				lr.Owed++
				if cut {
					lr.CutOwed++
				}
				if !w.notifiedBy(n.URI, x) {
					hs := []*History{x.Hist}
					for _, rd := range n.Delete.Redemptions {
						hs = append(hs, rd.Hist)
					}
					add(CheckListenMissed, n.URI, fmt.Sprintf("a stream sent at t=%s acknowledged the note and ended at t=%s, %s after its deletion was answered, without its update",
						x.Sent.Round(time.Millisecond), x.endedAt().Round(time.Millisecond), (x.endedAt()-n.DeletedAt).Round(time.Millisecond)), hs...)
				}
				break
			}
		}
		w.mu.Unlock()
	}
}

// cut reports whether an attempt of one of the delete's redemptions had
// its instance killed under it.
func (d *DeleteRecord) cut() bool {
	for _, rd := range d.Redemptions {
		for _, a := range rd.Hist.Attempts {
			if a.Class == Injected {
				return true
			}
		}
	}
	return false
}

// notifiedBy reports whether x, or a stream before it, sent uri's update.
func (w *watcher) notifiedBy(uri string, x *Watch) bool {
	for _, y := range w.watches {
		if slices.Contains(y.Updated, uri) {
			return true
		}
		if y == x {
			return false
		}
	}
	return false
}
