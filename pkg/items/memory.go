package items

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/internal/ddbattr"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
)

// Memory is a Table in the process's memory, for a function run without
// a DynamoDB table: the same writes, conditions and reads as DynamoDB
// (package itemstest holds both to one contract), bounded by what it
// stores.
type Memory struct {
	mu    sync.Mutex
	parts map[string]*partition
	n     int // items stored
	opts  MemoryOptions
}

// partition is one partition key's items, with their sort keys in order.
type partition struct {
	sks   []string
	items map[string]Item
}

// MemoryOptions bound a Memory table.
type MemoryOptions struct {
	// MaxItems is the most items it stores (DefaultMaxItems): a write that
	// would store more is refused with ErrFull, nothing written.
	MaxItems int
	// TTL, if set, names the attribute that holds an item's expiry in
	// seconds since 1970, as a DynamoDB table's time to live does. As
	// DynamoDB deletes expired items some time after they expire (and
	// until then reads return them), Memory deletes them when it needs
	// the room: before refusing a write with ErrFull.
	TTL string
}

// DefaultMaxItems bounds a Memory table: at DynamoDB's largest item,
// 400 KB, about 4 GB at the very worst; a tool's small items take a few
// megabytes.
const DefaultMaxItems = 10_000

// MaxItemBytes is the largest item DynamoDB stores, counted as it counts
// (attribute names and values, the key's included); Memory refuses a
// larger one as DynamoDB does, with ErrInvalid, counting a number as its
// largest (21 bytes), so that what memory stores DynamoDB stores too.
const MaxItemBytes = ddbattr.MaxItemBytes

// ErrFull is a write to a Memory table that would store more than its
// MaxItems: nothing is written. It is the store's bound, not the
// caller's fault, and retrying does not help until items are deleted.
var ErrFull = errors.New("items: the table in memory is full")

// NewMemory returns an empty table in memory.
func NewMemory(o MemoryOptions) *Memory {
	if o.MaxItems <= 0 {
		o.MaxItems = DefaultMaxItems
	}
	return &Memory{parts: map[string]*partition{}, opts: o}
}

// Write makes ops once: enlisted in ctx's call's claim when its claims
// are in memory and it commits in one step (claims.Write.Apply), else at
// once. See Table.
func (m *Memory) Write(ctx context.Context, ops ...Op) error {
	if err := check(ops); err != nil || len(ops) == 0 {
		return err
	}
	enlisted := claims.EnlistWrites(ctx, claims.Write{Apply: func(commit func() bool) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		next, err := m.plan(ops)
		if err != nil {
			var ce *ConditionError
			if errors.As(err, &ce) && ce.Failure != nil {
				// Answered as it is, as DynamoDB answers OrFail.
				return ce.Failure
			}
			return err
		}
		if commit() {
			m.apply(next)
		}
		return nil
	}})
	if enlisted {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	next, err := m.plan(ops)
	if err != nil {
		return err
	}
	m.apply(next)
	return nil
}

// change is one planned op: the item k becomes item (nil: deleted).
type change struct {
	k    Key
	item Item
}

// plan checks every op's conditions against the items as they are and
// computes what each becomes, changing nothing.
func (m *Memory) plan(ops []Op) ([]change, error) {
	next := make([]change, len(ops))
	n := m.n
	for i, o := range ops {
		cur, exists := m.get(o.key)
		for _, c := range o.conds {
			if !holds(c, cur, exists) {
				return nil, &ConditionError{Op: i, Failure: o.fail}
			}
		}
		var item Item
		switch o.kind {
		case opPut:
			item = copyItem(o.item)
		case opUpdate:
			item = copyItem(cur)
			if item == nil {
				item = Item{}
			}
			for _, s := range o.sets {
				item[s.name] = copyValue(s.v)
			}
			for _, a := range o.incl {
				set, err := include(item[a.name], a.v.(*types.AttributeValueMemberSS).Value[0])
				if err != nil {
					return nil, fmt.Errorf("write %d: %w", i, err)
				}
				item[a.name] = set
			}
			for _, a := range o.adds {
				sum, err := addInt(item[a.name], a.n)
				if err != nil {
					return nil, fmt.Errorf("write %d: %w", i, err)
				}
				item[a.name] = Int(sum)
			}
		}
		if item != nil {
			if size := itemSize(o.key, item); size > MaxItemBytes {
				return nil, fmt.Errorf("%w: write %d makes an item of %d bytes, over %d", ErrInvalid, i, size, MaxItemBytes)
			}
		}
		switch {
		case item != nil && !exists:
			n++
		case item == nil && exists:
			n--
		}
		next[i] = change{o.key, item}
	}
	if n > m.opts.MaxItems && n > m.n {
		if m.opts.TTL != "" && m.expire(time.Now()) > 0 {
			return m.plan(ops)
		}
		return nil, fmt.Errorf("%w: at most %d items", ErrFull, m.opts.MaxItems)
	}
	return next, nil
}

// expire deletes the items whose TTL attribute is past at now and
// reports how many.
func (m *Memory) expire(now time.Time) int {
	var gone []change
	for pk, p := range m.parts {
		for sk, it := range p.items {
			if v, ok := it[m.opts.TTL].(*types.AttributeValueMemberN); ok {
				if at, err := strconv.ParseInt(v.Value, 10, 64); err == nil && at < now.Unix() {
					gone = append(gone, change{k: Key{PK: pk, SK: sk}})
				}
			}
		}
	}
	m.apply(gone)
	return len(gone)
}

// MaxItems is the most items m stores.
func (m *Memory) MaxItems() int { return m.opts.MaxItems }

// apply makes planned changes.
func (m *Memory) apply(cs []change) {
	for _, c := range cs {
		p := m.parts[c.k.PK]
		if c.item == nil {
			if p == nil {
				continue
			}
			if _, ok := p.items[c.k.SK]; ok {
				delete(p.items, c.k.SK)
				i, _ := slices.BinarySearch(p.sks, c.k.SK)
				p.sks = slices.Delete(p.sks, i, i+1)
				m.n--
			}
			if len(p.items) == 0 {
				delete(m.parts, c.k.PK)
			}
			continue
		}
		if p == nil {
			p = &partition{items: map[string]Item{}}
			m.parts[c.k.PK] = p
		}
		if _, ok := p.items[c.k.SK]; !ok {
			i, _ := slices.BinarySearch(p.sks, c.k.SK)
			p.sks = slices.Insert(p.sks, i, c.k.SK)
			m.n++
		}
		p.items[c.k.SK] = c.item
	}
}

func (m *Memory) get(k Key) (Item, bool) {
	p := m.parts[k.PK]
	if p == nil {
		return nil, false
	}
	it, ok := p.items[k.SK]
	return it, ok
}

// Get reads the item k.
func (m *Memory) Get(ctx context.Context, k Key) (Item, bool, error) {
	if err := checkKey(k); err != nil {
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.get(k)
	return copyItem(it), ok, nil
}

// Query reads items of the partition pk in sort-key order.
func (m *Memory) Query(ctx context.Context, pk, after string, limit int) ([]Entry, bool, error) {
	if err := checkKey(Key{PK: pk, SK: "-"}); err != nil {
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	limit = min(max(limit, 1), MaxQuery)
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[pk]
	if p == nil {
		return nil, false, nil
	}
	i, found := slices.BinarySearch(p.sks, after)
	if found {
		i++
	}
	var entries []Entry
	for ; i < len(p.sks) && len(entries) < limit; i++ {
		entries = append(entries, Entry{SK: p.sks[i], Item: copyItem(p.items[p.sks[i]])})
	}
	return entries, i < len(p.sks), nil
}

// holds evaluates c on the item cur (exists: whether there is one) as
// DynamoDB evaluates its condition expression: a comparison with an
// attribute of another type is false, not an error.
func holds(c Cond, cur Item, exists bool) bool {
	switch c.kind {
	case condAbsent:
		return !exists
	case condExists:
		return exists
	case condEqual:
		v, ok := cur[c.name]
		return ok && equal(v, c.v)
	case condLess, condAtLeast:
		v, ok := cur[c.name]
		x := new(big.Float)
		if ok {
			n, isN := v.(*types.AttributeValueMemberN)
			if !isN {
				return false
			}
			if _, _, err := x.Parse(n.Value, 10); err != nil {
				return false
			}
		}
		cmp := x.Cmp(new(big.Float).SetInt64(c.n))
		if c.kind == condLess {
			return cmp < 0
		}
		return cmp >= 0
	}
	return false
}

// equal compares attribute values as DynamoDB's = does: numbers by value,
// the rest by type and content.
func equal(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		if !ok {
			return false
		}
		x, _, err1 := big.ParseFloat(a.Value, 10, 256, big.ToNearestEven)
		y, _, err2 := big.ParseFloat(b.Value, 10, 256, big.ToNearestEven)
		return err1 == nil && err2 == nil && x.Cmp(y) == 0
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	}
	return reflect.DeepEqual(a, b)
}

// include is the string set v (absent: empty) with member.
func include(v types.AttributeValue, member string) (types.AttributeValue, error) {
	if v == nil {
		return &types.AttributeValueMemberSS{Value: []string{member}}, nil
	}
	ss, ok := v.(*types.AttributeValueMemberSS)
	if !ok {
		return nil, fmt.Errorf("%w: including a member in an attribute that is not a string set", ErrInvalid)
	}
	if slices.Contains(ss.Value, member) {
		return ss, nil
	}
	return &types.AttributeValueMemberSS{Value: append(slices.Clone(ss.Value), member)}, nil
}

// addInt is v (absent: 0), an integer, plus n.
func addInt(v types.AttributeValue, n int64) (int64, error) {
	if v == nil {
		return n, nil
	}
	nv, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("%w: adding to an attribute that is not a number", ErrInvalid)
	}
	x, err := strconv.ParseInt(nv.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: adding to a number that is not a 64-bit integer", ErrInvalid)
	}
	sum := x + n
	if (n > 0 && sum < x) || (n < 0 && sum > x) {
		return 0, fmt.Errorf("%w: the sum overflows a 64-bit integer", ErrInvalid)
	}
	return sum, nil
}

// itemSize is an item's size as DynamoDB counts it (never less): each
// attribute's name and value, the key's included.
func itemSize(k Key, it Item) int {
	return len("pk") + len(k.PK) + len("sk") + len(k.SK) + ddbattr.Size(it)
}

// copyItem copies it, so that what a caller holds and what is stored
// never share a value.
func copyItem(it Item) Item {
	if it == nil {
		return nil
	}
	c := make(Item, len(it))
	for n, v := range it {
		c[n] = copyValue(v)
	}
	return c
}

func copyValue(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: v.Value}
	case *types.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: v.Value}
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: bytes.Clone(v.Value)}
	case *types.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Value}
	case *types.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: v.Value}
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = copyValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: copyItem(v.Value)}
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: slices.Clone(v.Value)}
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: slices.Clone(v.Value)}
	case *types.AttributeValueMemberBS:
		bs := make([][]byte, len(v.Value))
		for i, e := range v.Value {
			bs[i] = bytes.Clone(e)
		}
		return &types.AttributeValueMemberBS{Value: bs}
	}
	return v
}
