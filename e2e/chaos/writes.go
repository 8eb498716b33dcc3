package chaos

import (
	"encoding/json"
	"strings"
	"sync"
)

// Writes is what the fault proxy saw of the transactions that carried a
// note, by the note's marker (Proxy.Watch): how many put the key's claim
// as completed in the same transaction as the note (a one-step commit:
// notes_add, a tool with no effect but its enlisted writes, commits its
// claim, its note, its count and its result in one request), and how many
// completed a claim taken before (a claim-first commit, an Update of the
// claim to ":completed"). Every attempt counts, whatever became of it: a
// request dropped, an answer lost, a transaction cancelled.
type Writes struct {
	mu                  sync.Mutex
	oneStep, claimFirst map[string]int
}

// NewWrites returns an empty record.
func NewWrites() *Writes { return &Writes{oneStep: map[string]int{}, claimFirst: map[string]int{}} }

// Watch records a request the proxy passes on (Proxy.Watch's function).
func (w *Writes) Watch(op, _ string, body []byte) {
	if op != "TransactWriteItems" || !strings.Contains(string(body), "mk:") {
		return
	}
	var tx struct {
		TransactItems []struct {
			Put *struct {
				Item map[string]map[string]json.RawMessage
			}
			Update *struct {
				Key                       map[string]map[string]json.RawMessage
				ExpressionAttributeValues map[string]json.RawMessage
			}
		}
	}
	if json.Unmarshal(body, &tx) != nil {
		return
	}
	oneStep, claimFirst := false, false
	var markers []string
	for _, it := range tx.TransactItems {
		switch {
		case it.Put != nil:
			pk, status := attrS(it.Put.Item["pk"]), attrS(it.Put.Item["status"])
			if strings.HasPrefix(pk, "claim#") && status == "completed" {
				oneStep = true
			}
			if m := marker(attrS(it.Put.Item["text"])); m != "" {
				markers = append(markers, m)
			}
		case it.Update != nil:
			if _, ok := it.Update.ExpressionAttributeValues[":completed"]; ok && strings.HasPrefix(attrS(it.Update.Key["pk"]), "claim#") {
				claimFirst = true
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range markers {
		if oneStep {
			w.oneStep[m]++
		}
		if claimFirst {
			w.claimFirst[m]++
		}
	}
}

// Count returns how many one-step and claim-first transactions carried
// the note with marker m.
func (w *Writes) Count(m string) (oneStep, claimFirst int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.oneStep[m], w.claimFirst[m]
}

// attrS is a DynamoDB string attribute's value ("" for another type).
func attrS(av map[string]json.RawMessage) string {
	var s string
	if raw, ok := av["S"]; !ok || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
