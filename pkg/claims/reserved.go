package claims

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// reservedPrefixes are the partition-key prefixes under which this
// module's packages keep their own items in the table a function shares
// with them (template.yaml's claims table, partition key "pk"):
//
//	claim#    this package's idempotency claims
//	redeem#   this package's redemptions of single-use request state
//	once#     this package's spent one-time values (SpendOnce)
//	task#     package tasks' tasks
//	rate#     package ratelimit's call counters
//	slots#    package ratelimit's live task and stream slots
//	event#    package events' listen-stream events
//	catalog#  package events' record of the catalogs
//
// A function's own items use other keys (the demo's notes are under
// "notes#").
var reservedPrefixes = [...]string{"claim#", "redeem#", "once#", "task#", "rate#", "slots#", "event#", "catalog#"}

// Reserved reports whether pk, a partition key's value in the shared
// table, is under a prefix this module keeps its own items under, and
// which. A write a tool enlists (Enlist, EnlistWrites) into the claims
// store's table under one of them is refused: the call is answered as a
// server fault naming the prefix (ErrReservedKey), and nothing of it is
// written.
func Reserved(pk string) (prefix string, ok bool) {
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(pk, p) {
			return p, true
		}
	}
	return "", false
}

// ErrReservedKey is the cause of a call refused because a write it
// enlisted names a key under a reserved prefix (Reserved).
var ErrReservedKey = errors.New("claims: an enlisted write names a key under a prefix this module reserves")

// TableStore is a Store that names the DynamoDB table its claims are
// kept in, so that a write enlisted into that table under a reserved key
// can be told from one into a table of the function's own.
type TableStore interface {
	Store
	Table() string
}

// reservedWrite is the error of the first write of ws into table ("":
// any) under a reserved key, or nil.
func reservedWrite(table string, ws []Write) error {
	for _, w := range ws {
		if w.Item == nil {
			continue
		}
		name, key := itemKey(w.Item)
		if table != "" && name != table {
			continue
		}
		if pk, ok := key["pk"].(*types.AttributeValueMemberS); ok {
			if prefix, ok := Reserved(pk.Value); ok {
				// The prefix only: the rest of the key may name a caller.
				return fmt.Errorf("%w (%s…)", ErrReservedKey, prefix)
			}
		}
	}
	return nil
}

// itemKey is the table a transaction's write goes to and the item's key
// (a Put's whole item).
func itemKey(it *types.TransactWriteItem) (table string, key map[string]types.AttributeValue) {
	switch {
	case it.Put != nil:
		return deref(it.Put.TableName), it.Put.Item
	case it.Update != nil:
		return deref(it.Update.TableName), it.Update.Key
	case it.Delete != nil:
		return deref(it.Delete.TableName), it.Delete.Key
	case it.ConditionCheck != nil:
		return deref(it.ConditionCheck.TableName), it.ConditionCheck.Key
	}
	return "", nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
