// Package items is one way for a tool to write its own effect: it puts,
// updates and deletes its items in a table, and the write is made once.
//
// A tool writes with Table.Write, whatever the call and whatever the
// store:
//
//   - In a call that holds an idempotency claim (it carries a key and its
//     tool has a side effect), the writes are enlisted in the claim
//     (claims.EnlistWrites): they commit in one transaction with the
//     claim's completion and the stored result, or not at all, after the
//     handler returns. A retry with the key replays the result and writes
//     nothing, whatever failed and whenever the process died.
//   - Otherwise they are written at once, all or none (one conditional
//     request for one write, a transaction for several), and Write
//     reports how that went.
//   - The same holds for a table in memory (NewMemory), which the
//     endpoint uses when no DynamoDB table is configured: a local run
//     behaves as one on DynamoDB, including which calls commit with their
//     claim (in memory, those of a tool declared
//     stateless.Tool.EnlistedEffectsOnly, as claims.Write.Apply says).
//
// Each write may carry conditions (If: Absent, Exists, Equal, Less,
// AtLeast) and the tool failure its call is answered with when they do not
// hold (OrFail). Because an enlisted write is made after the handler
// returns, a handler never depends on the outcome of its writes: it
// decides its answer from what it read and from the conditions it gave,
// and a failed condition replaces that answer with the failure, in both
// modes. One contract suite (package itemstest) holds DynamoDB and memory
// to the same behaviour.
//
// Items live in a table keyed as template.yaml's claims table is: a
// partition key "pk" and a sort key "sk", both strings. The partition-key
// prefixes this module keeps its own items under (claims.Reserved) are
// refused, as is an empty key.
package items

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Table is where a tool keeps its items: DynamoDB (NewDynamoDB) or memory
// (NewMemory).
type Table interface {
	// Write makes ops once, all or none, as the package doc says: enlisted
	// in the claim of ctx's call when it holds one (Write returns nil and
	// the ops commit with the call's result), else at once. At once, a
	// condition that does not hold is a *ConditionError (its op's OrFail
	// failure, if any, is what it unwraps to), nothing written; a store
	// that cannot be reached is a retryable *mcperr.ToolError (RetryLater)
	// unless ctx has ended, then ctx's error.
	Write(ctx context.Context, ops ...Op) error
	// Get reads one item, strongly consistent: its attributes other than
	// the key, and whether it exists.
	Get(ctx context.Context, k Key) (Item, bool, error)
	// Query reads, strongly consistent and in sort-key order, up to limit
	// (at most MaxQuery) items of the partition pk whose sort keys sort
	// after after ("" for the first), and whether more follow.
	Query(ctx context.Context, pk, after string, limit int) ([]Entry, bool, error)
}

// MaxQuery is the most items one Query returns.
const MaxQuery = 1000

// MaxOps is the most ops one Write takes: DynamoDB's limit on a
// transaction, less room for the claim and the records that commit with
// it when the writes are enlisted (claims.MaxEnlisted).
const MaxOps = claims.MaxEnlisted

// Key names an item: its partition key (pk) and sort key (sk).
type Key struct{ PK, SK string }

// Item is an item's attributes other than its key.
type Item map[string]types.AttributeValue

// Entry is an item Query read, with its sort key.
type Entry struct {
	SK   string
	Item Item
}

// S, N and Int are attribute values: a string, a number as DynamoDB
// writes it (decimal text), an integer.
func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func N(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func Int(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// opKind is what an op does to its item.
type opKind uint8

const (
	opPut opKind = iota + 1
	opUpdate
	opDelete
)

// Op is one write: Put, Update or Delete, with its conditions. Its
// methods return a changed copy, so ops can be built in one expression.
type Op struct {
	kind  opKind
	key   Key
	item  Item      // Put: the whole item but its key
	sets  []setAttr // Update: attributes set
	adds  []addAttr // Update: numbers added to
	incl  []setAttr // Update: string sets added to (v is an SS of one)
	conds []Cond
	fail  *mcperr.ToolError
}

type setAttr struct {
	name string
	v    types.AttributeValue
}

type addAttr struct {
	name string
	n    int64
}

// Put writes the item k with exactly the attributes it (and its key),
// replacing one that exists.
func Put(k Key, it Item) Op { return Op{kind: opPut, key: k, item: it} }

// Update changes the item k (Set, Add), making it if it does not exist.
func Update(k Key) Op { return Op{kind: opUpdate, key: k} }

// Delete deletes the item k; deleting one that does not exist is no error
// (give it the condition Exists to make it one).
func Delete(k Key) Op { return Op{kind: opDelete, key: k} }

// Set has an Update set the attribute name to v.
func (o Op) Set(name string, v types.AttributeValue) Op {
	o.sets = append(o.sets[:len(o.sets):len(o.sets)], setAttr{name, v})
	return o
}

// Add has an Update add n to the integer attribute name, counting an
// absent one as 0.
func (o Op) Add(name string, n int64) Op {
	o.adds = append(o.adds[:len(o.adds):len(o.adds)], addAttr{name, n})
	return o
}

// Include has an Update add member to the string set name, making the
// set if it is absent: including a member twice leaves one, so a write
// made again (an SDK's retry of one whose answer was lost) counts once.
func (o Op) Include(name, member string) Op {
	o.incl = append(o.incl[:len(o.incl):len(o.incl)], setAttr{name, &types.AttributeValueMemberSS{Value: []string{member}}})
	return o
}

// If adds conditions, all of which must hold, as the item is before the
// write, for the write (and every op written with it) to be made.
func (o Op) If(cs ...Cond) Op {
	o.conds = append(o.conds[:len(o.conds):len(o.conds)], cs...)
	return o
}

// OrFail is the tool failure the call is answered with when o's
// conditions do not hold: returned (wrapped in a *ConditionError) by a
// Write at once, answered in place of the handler's result by one that
// was enlisted. Without it such a write at once is a bare
// *ConditionError, and an enlisted one is answered as not committed
// (retryable: the retry runs the tool again).
func (o Op) OrFail(f *mcperr.ToolError) Op {
	o.fail = f
	return o
}

// Key is the item o writes.
func (o Op) Key() Key { return o.key }

// condKind is what a condition checks.
type condKind uint8

const (
	condAbsent condKind = iota + 1
	condExists
	condEqual
	condLess
	condAtLeast
)

// Cond is a condition on an item as it is before a write.
type Cond struct {
	kind condKind
	name string
	v    types.AttributeValue
	n    int64
}

// Absent holds when the item does not exist.
func Absent() Cond { return Cond{kind: condAbsent} }

// Exists holds when the item exists.
func Exists() Cond { return Cond{kind: condExists} }

// Equal holds when the item's attribute name equals v (numbers compared
// as numbers); never when the item or the attribute is absent.
func Equal(name string, v types.AttributeValue) Cond { return Cond{kind: condEqual, name: name, v: v} }

// Less holds when the number attribute name is less than n, an absent
// item or attribute counting as 0.
func Less(name string, n int64) Cond { return Cond{kind: condLess, name: name, n: n} }

// AtLeast holds when the number attribute name is at least n, an absent
// item or attribute counting as 0.
func AtLeast(name string, n int64) Cond { return Cond{kind: condAtLeast, name: name, n: n} }

// ConditionError is a Write at once whose op Op's conditions did not hold:
// nothing was written. It unwraps to the op's OrFail failure, so that a
// handler returning it is answered with that failure.
type ConditionError struct {
	Op      int
	Failure *mcperr.ToolError
}

func (e *ConditionError) Error() string {
	return fmt.Sprintf("items: the conditions of write %d do not hold: nothing was written", e.Op)
}

func (e *ConditionError) Unwrap() error {
	if e.Failure == nil {
		return nil
	}
	return e.Failure
}

// ErrInvalid is the cause of a Write, Get or Query refused before
// anything is read or written: a key empty or under a reserved prefix
// (claims.ErrReservedKey too), an attribute named pk or sk, two ops on
// one item, more than MaxOps ops, an op without a change. It is a fault
// of the tool's, not worth retrying.
var ErrInvalid = errors.New("items: invalid")

// check refuses ops no store would make, before either does anything.
func check(ops []Op) error {
	if len(ops) == 0 {
		return nil
	}
	if len(ops) > MaxOps {
		return fmt.Errorf("%w: %d writes, at most %d", ErrInvalid, len(ops), MaxOps)
	}
	seen := make(map[Key]bool, len(ops))
	for i, o := range ops {
		if err := checkKey(o.key); err != nil {
			return fmt.Errorf("write %d: %w", i, err)
		}
		if seen[o.key] {
			return fmt.Errorf("%w: write %d names an item an earlier write names", ErrInvalid, i)
		}
		seen[o.key] = true
		switch o.kind {
		case opPut:
			for name, v := range o.item {
				if err := checkAttr(name, v); err != nil {
					return fmt.Errorf("write %d: %w", i, err)
				}
			}
		case opUpdate:
			if len(o.sets)+len(o.adds)+len(o.incl) == 0 {
				return fmt.Errorf("%w: write %d updates nothing", ErrInvalid, i)
			}
			names := map[string]bool{}
			for _, s := range o.sets {
				if err := checkAttr(s.name, s.v); err != nil {
					return fmt.Errorf("write %d: %w", i, err)
				}
				names[s.name] = true
			}
			for _, a := range o.adds {
				if err := checkAttr(a.name, Int(a.n)); err != nil {
					return fmt.Errorf("write %d: %w", i, err)
				}
				if names[a.name] {
					return fmt.Errorf("%w: write %d changes an attribute twice", ErrInvalid, i)
				}
				names[a.name] = true
			}
			for _, a := range o.incl {
				if err := checkAttr(a.name, a.v); err != nil {
					return fmt.Errorf("write %d: %w", i, err)
				}
				if names[a.name] {
					return fmt.Errorf("%w: write %d changes an attribute twice", ErrInvalid, i)
				}
				names[a.name] = true
			}
		case opDelete:
		default:
			return fmt.Errorf("%w: write %d is not a Put, Update or Delete", ErrInvalid, i)
		}
		for _, c := range o.conds {
			if c.kind >= condEqual && (c.name == "" || c.name == "pk" || c.name == "sk") {
				return fmt.Errorf("%w: write %d has a condition on no attribute of its own", ErrInvalid, i)
			}
			if c.kind == condEqual && c.v == nil {
				return fmt.Errorf("%w: write %d compares to no value", ErrInvalid, i)
			}
		}
	}
	return nil
}

// checkKey refuses an empty key and one under a reserved prefix.
func checkKey(k Key) error {
	if k.PK == "" || k.SK == "" {
		return fmt.Errorf("%w: an empty key", ErrInvalid)
	}
	if prefix, ok := claims.Reserved(k.PK); ok {
		// The prefix only: the rest of the key may name a caller.
		return fmt.Errorf("%w: %w (%s…)", ErrInvalid, claims.ErrReservedKey, prefix)
	}
	return nil
}

func checkAttr(name string, v types.AttributeValue) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: an attribute without a name", ErrInvalid)
	case name == "pk" || name == "sk":
		return fmt.Errorf("%w: the key is the Key's, not an attribute", ErrInvalid)
	case v == nil:
		return fmt.Errorf("%w: attribute %q has no value", ErrInvalid, name)
	}
	return nil
}

// unavailable is a store's failure as Write, Get and Query return it:
// ctx's error when ctx has ended, else a RetryLater tool failure (what
// the model sees: something behind the tool is down, try again).
func unavailable(ctx context.Context, what string, err error) error {
	if e := ctx.Err(); e != nil {
		return e
	}
	return mcperr.NewRetryLater(0, fmt.Errorf("items: %s: %w", what, err))
}
