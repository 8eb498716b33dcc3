package costs

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Op is one request a function made of DynamoDB, billed as DynamoDB
// bills it.
type Op struct {
	// Name is the operation: PutItem, TransactWriteItems, Query...
	Name string
	// Items are the items it wrote or read, in the request's order (a
	// query's in the answer's).
	Items []ItemUse
	// Failed is the error DynamoDB answered, by its type
	// (ConditionalCheckFailedException, TransactionCanceledException); ""
	// when it succeeded.
	Failed string
	// WriteUnits are the write request units billed.
	WriteUnits int
	// ReadHalves are the read request units billed, in halves (an
	// eventually consistent read of up to 4 KB is half a unit).
	ReadHalves int
}

// ItemUse is one item of a request.
type ItemUse struct {
	// Prefix is the item's partition key up to its first '#' ("claim#",
	// "notes#", "rate#"; a slot's up to its second, "slots#tasks#"):
	// whose item it is.
	Prefix string
	// Size is the item's size in bytes (ItemSize): for a write, the
	// larger of its sizes before and after, as DynamoDB bills a write.
	Size int
	// Write says the item was written (or a write of it was refused by
	// its condition), not read.
	Write bool
}

// DynamoDB is a metering proxy in front of DynamoDB Local: point the
// function's DynamoDB endpoint at URL. Every request passes through
// unchanged; a write's items are read straight from DynamoDB Local (not
// through the proxy) just before and just after it, so that its units are
// those of the larger image, as DynamoDB bills a write (a write refused
// by its condition included); a read's items are read whole, as
// DynamoDB bills a read whatever its projection. Writes through the proxy
// are serialised, so that the images are the write's own.
type DynamoDB struct {
	URL    string
	target string
	direct *dynamodb.Client
	srv    *httptest.Server
	http   *http.Client

	writes *sync.Mutex // held across a write and its images
	mu     sync.Mutex  // guards ops, keys, errs
	ops    []Op
	keys   map[string][]string // table: key attribute names
	errs   []error
}

// NewDynamoDB starts the proxy on loopback in front of endpoint (DynamoDB
// Local's URL); direct is a client of the same DynamoDB Local with the
// function's credentials (DynamoDB Local keeps a database per access key
// and region), used for the items' images.
func NewDynamoDB(endpoint string, direct *dynamodb.Client) *DynamoDB {
	d := &DynamoDB{target: strings.TrimSuffix(endpoint, "/"), direct: direct, writes: &sync.Mutex{}}
	d.start()
	return d
}

// Another starts a second proxy in front of the same DynamoDB Local,
// which counts apart but makes its writes in turn with d's: one for each
// instance of a function, so that what another instance does meanwhile
// (a task's worker starting while the call that made the task is still
// answering) is not counted as the call's.
func (d *DynamoDB) Another() *DynamoDB {
	n := &DynamoDB{target: d.target, direct: d.direct, writes: d.writes}
	n.start()
	return n
}

func (d *DynamoDB) start() {
	d.keys = map[string][]string{}
	d.http = &http.Client{Timeout: time.Minute}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	d.URL = d.srv.URL
}

// Close stops the proxy.
func (d *DynamoDB) Close() { d.srv.Close() }

// Take returns the requests billed since the last Take, and any failure
// to bill one (a request the proxy could not read, an image it could not
// fetch).
func (d *DynamoDB) Take() ([]Op, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ops, errs := d.ops, d.errs
	d.ops, d.errs = nil, nil
	return ops, errors.Join(errs...)
}

func (d *DynamoDB) fail(err error) {
	d.mu.Lock()
	d.errs = append(d.errs, err)
	d.mu.Unlock()
}

// target is one item a request names: its table and key.
type target struct {
	table string
	key   Item
	write bool
	// transact bills it twice, as a transaction's item.
	transact bool
}

func (d *DynamoDB) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	ctx := r.Context()
	targets, consistent, err := d.targets(ctx, op, body)
	if err != nil {
		d.fail(fmt.Errorf("%s: %w", op, err))
	}
	writes := slices.ContainsFunc(targets, func(t target) bool { return t.write })
	if writes {
		d.writes.Lock()
		defer d.writes.Unlock()
	}
	var before []int
	if writes {
		before = d.sizes(ctx, targets)
	}
	status, header, answer, err := d.forward(r, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	rec := Op{Name: op}
	if status != http.StatusOK {
		rec.Failed = errorType(answer)
	}
	billed := status == http.StatusOK || rec.Failed == "ConditionalCheckFailedException" || rec.Failed == "TransactionCanceledException"
	if op == "Query" || op == "Scan" {
		targets, err = d.answered(ctx, body, answer)
		if err != nil {
			d.fail(fmt.Errorf("%s: %w", op, err))
		}
	}
	after := d.sizes(ctx, targets)
	if billed {
		d.bill(&rec, op, targets, before, after, consistent)
	}
	d.mu.Lock()
	d.ops = append(d.ops, rec)
	d.mu.Unlock()
	for k, vs := range header {
		w.Header()[k] = vs
	}
	w.WriteHeader(status)
	w.Write(answer)
}

// bill fills rec's items and units.
func (d *DynamoDB) bill(rec *Op, op string, targets []target, before, after []int, consistent bool) {
	readBytes := 0
	for i, t := range targets {
		size := after[i]
		if t.write && before != nil {
			size = max(size, before[i])
		}
		rec.Items = append(rec.Items, ItemUse{Prefix: prefix(t.key), Size: size, Write: t.write})
		switch {
		case t.write && t.transact:
			rec.WriteUnits += 2 * WriteUnits(size)
		case t.write:
			rec.WriteUnits += WriteUnits(size)
		case op == "Query" || op == "Scan":
			readBytes += size
		default:
			// A strongly consistent read; an eventually consistent one
			// is half of it, a transaction's twice.
			halves := 2 * ReadUnits(size)
			if t.transact {
				halves *= 2
			} else if !consistent {
				halves /= 2
			}
			rec.ReadHalves += halves
		}
	}
	if op == "Query" || op == "Scan" {
		// A query is billed on the sum of the sizes of the items it
		// read, rounded up to 4 KB, even when it finds none.
		rec.ReadHalves = 2 * ReadUnits(readBytes)
		if !consistent {
			rec.ReadHalves /= 2
		}
	}
}

// prefix is an item's partition key ("pk") up to its first '#', and a
// slot's up to its second ("slots#tasks#"): whose item it is.
func prefix(key Item) string {
	var av struct{ S string }
	if err := json.Unmarshal(key["pk"], &av); err != nil {
		return ""
	}
	i := strings.IndexByte(av.S, '#')
	if i < 0 {
		return av.S
	}
	if av.S[:i+1] == "slots#" {
		if j := strings.IndexByte(av.S[i+1:], '#'); j >= 0 {
			return av.S[:i+1+j+1]
		}
	}
	return av.S[:i+1]
}

// errorType is the type of a DynamoDB error answer ("...#Type").
func errorType(answer []byte) string {
	var e struct {
		Type string `json:"__type"`
	}
	json.Unmarshal(answer, &e)
	_, t, _ := strings.Cut(e.Type, "#")
	if t == "" {
		return e.Type
	}
	return t
}

// forward sends the request on to DynamoDB Local as it came.
func (d *DynamoDB) forward(r *http.Request, body []byte) (int, http.Header, []byte, error) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, d.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	out.Header = r.Header.Clone()
	resp, err := d.http.Do(out)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, answer, nil
}

// targets are the items a request names, and whether its reads are
// strongly consistent.
func (d *DynamoDB) targets(ctx context.Context, op string, body []byte) ([]target, bool, error) {
	var in struct {
		TableName      string
		Item           Item
		Key            Item
		ConsistentRead bool
		TransactItems  []map[string]struct {
			TableName string
			Item      Item
			Key       Item
		}
		RequestItems map[string]json.RawMessage
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, false, err
	}
	switch op {
	case "PutItem":
		k, err := d.keyOf(ctx, in.TableName, in.Item)
		return []target{{table: in.TableName, key: k, write: true}}, false, err
	case "UpdateItem", "DeleteItem":
		return []target{{table: in.TableName, key: in.Key, write: true}}, false, nil
	case "GetItem":
		return []target{{table: in.TableName, key: in.Key}}, in.ConsistentRead, nil
	case "Query", "Scan":
		return nil, in.ConsistentRead, nil
	case "TransactWriteItems", "TransactGetItems":
		var out []target
		for _, ti := range in.TransactItems {
			for action, a := range ti {
				key := a.Key
				if action == "Put" {
					var err error
					if key, err = d.keyOf(ctx, a.TableName, a.Item); err != nil {
						return nil, false, err
					}
				}
				// A transaction's condition check is billed as its
				// writes are (the pessimistic reading).
				out = append(out, target{table: a.TableName, key: key, write: op == "TransactWriteItems", transact: true})
			}
		}
		return out, true, nil
	case "BatchWriteItem":
		var out []target
		for table, raw := range in.RequestItems {
			var reqs []struct {
				PutRequest    *struct{ Item Item }
				DeleteRequest *struct{ Key Item }
			}
			if err := json.Unmarshal(raw, &reqs); err != nil {
				return nil, false, err
			}
			for _, q := range reqs {
				switch {
				case q.PutRequest != nil:
					k, err := d.keyOf(ctx, table, q.PutRequest.Item)
					if err != nil {
						return nil, false, err
					}
					out = append(out, target{table: table, key: k, write: true})
				case q.DeleteRequest != nil:
					out = append(out, target{table: table, key: q.DeleteRequest.Key, write: true})
				}
			}
		}
		return out, false, nil
	case "BatchGetItem":
		var out []target
		consistent := true
		for table, raw := range in.RequestItems {
			var q struct {
				Keys           []Item
				ConsistentRead bool
			}
			if err := json.Unmarshal(raw, &q); err != nil {
				return nil, false, err
			}
			consistent = consistent && q.ConsistentRead
			for _, k := range q.Keys {
				out = append(out, target{table: table, key: k})
			}
		}
		return out, consistent, nil
	}
	// Anything else (DescribeTable, ...) bills no request units here.
	return nil, false, nil
}

// answered are the items a query or a scan answered with.
func (d *DynamoDB) answered(ctx context.Context, body, answer []byte) ([]target, error) {
	var in struct{ TableName string }
	var out struct{ Items []Item }
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(answer, &out); err != nil {
		return nil, err
	}
	var ts []target
	for _, it := range out.Items {
		k, err := d.keyOf(ctx, in.TableName, it)
		if err != nil {
			return nil, err
		}
		ts = append(ts, target{table: in.TableName, key: k})
	}
	return ts, nil
}

// keyOf is the key of item in table.
func (d *DynamoDB) keyOf(ctx context.Context, table string, item Item) (Item, error) {
	names, err := d.keyNames(ctx, table)
	if err != nil {
		return nil, err
	}
	k := Item{}
	for _, n := range names {
		v, ok := item[n]
		if !ok {
			return nil, fmt.Errorf("an item of %s without its key attribute %q", table, n)
		}
		k[n] = v
	}
	return k, nil
}

// keyNames are table's key attribute names.
func (d *DynamoDB) keyNames(ctx context.Context, table string) ([]string, error) {
	d.mu.Lock()
	names, ok := d.keys[table]
	d.mu.Unlock()
	if ok {
		return names, nil
	}
	out, err := d.direct.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, err
	}
	for _, k := range out.Table.KeySchema {
		names = append(names, aws.ToString(k.AttributeName))
	}
	d.mu.Lock()
	d.keys[table] = names
	d.mu.Unlock()
	return names, nil
}

// sizes are the sizes of the targets' items as they are now, 0 for one
// that does not exist.
func (d *DynamoDB) sizes(ctx context.Context, targets []target) []int {
	out := make([]int, len(targets))
	for i, t := range targets {
		key, err := fromWire(t.key)
		if err != nil {
			d.fail(err)
			continue
		}
		got, err := d.direct.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			d.fail(fmt.Errorf("reading an item's image: %w", err))
			continue
		}
		if got.Item == nil {
			continue
		}
		item, err := toWire(got.Item)
		if err != nil {
			d.fail(err)
			continue
		}
		if out[i], err = ItemSize(item); err != nil {
			d.fail(err)
		}
	}
	return out
}

// toWire turns an SDK item into its wire form.
func toWire(item map[string]types.AttributeValue) (Item, error) {
	out := Item{}
	for k, v := range item {
		b, err := json.Marshal(wireValue(v))
		if err != nil {
			return nil, err
		}
		out[k] = b
	}
	return out, nil
}

func wireValue(v types.AttributeValue) any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]string{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]string{"N": v.Value}
	case *types.AttributeValueMemberB:
		return map[string]string{"B": base64.StdEncoding.EncodeToString(v.Value)}
	case *types.AttributeValueMemberBOOL:
		return map[string]bool{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]bool{"NULL": true}
	case *types.AttributeValueMemberSS:
		return map[string][]string{"SS": v.Value}
	case *types.AttributeValueMemberNS:
		return map[string][]string{"NS": v.Value}
	case *types.AttributeValueMemberBS:
		bs := make([]string, len(v.Value))
		for i, b := range v.Value {
			bs[i] = base64.StdEncoding.EncodeToString(b)
		}
		return map[string][]string{"BS": bs}
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			l[i] = wireValue(e)
		}
		return map[string][]any{"L": l}
	case *types.AttributeValueMemberM:
		m := map[string]any{}
		for k, e := range v.Value {
			m[k] = wireValue(e)
		}
		return map[string]map[string]any{"M": m}
	}
	return nil
}

// fromWire turns a key in wire form into the SDK's (keys are strings,
// numbers or binaries).
func fromWire(key Item) (map[string]types.AttributeValue, error) {
	out := map[string]types.AttributeValue{}
	for k, raw := range key {
		var av struct {
			S, N *string
			B    []byte
		}
		if err := json.Unmarshal(raw, &av); err != nil {
			return nil, err
		}
		switch {
		case av.S != nil:
			out[k] = &types.AttributeValueMemberS{Value: *av.S}
		case av.N != nil:
			out[k] = &types.AttributeValueMemberN{Value: *av.N}
		case av.B != nil:
			out[k] = &types.AttributeValueMemberB{Value: av.B}
		default:
			return nil, fmt.Errorf("key attribute %q is not a string, number or binary", k)
		}
	}
	return out, nil
}

// KMS is a counting proxy in front of local-kms: point the function's
// KMS endpoint at URL; Take returns the operations it passed on
// (GenerateDataKey, Decrypt), by name.
type KMS struct {
	URL string
	srv *httptest.Server
	mu  sync.Mutex
	ops map[string]int
}

// NewKMS starts the proxy on loopback in front of endpoint.
func NewKMS(endpoint string) *KMS {
	k := &KMS{ops: map[string]int{}}
	target := strings.TrimSuffix(endpoint, "/")
	client := &http.Client{Timeout: time.Minute}
	k.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		k.mu.Lock()
		k.ops[strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "TrentService.")]++
		k.mu.Unlock()
		out, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		resp, err := client.Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for key, vs := range resp.Header {
			w.Header()[key] = vs
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	k.URL = k.srv.URL
	return k
}

// Close stops the proxy.
func (k *KMS) Close() { k.srv.Close() }

// Take returns the operations since the last Take.
func (k *KMS) Take() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	ops := k.ops
	k.ops = map[string]int{}
	return ops
}
