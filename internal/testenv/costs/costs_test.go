package costs

import (
	"encoding/json"
	"math/big"
	"os"
	"strings"
	"testing"
)

// TestItemSize holds ItemSize to the rules of "DynamoDB item sizes and
// formats", attribute type by attribute type.
func TestItemSize(t *testing.T) {
	for _, c := range []struct {
		item string
		want int
	}{
		{`{"pk":{"S":"claim#ab"}}`, 2 + 8},
		{`{"t":{"S":"𝄞"}}`, 1 + 4}, // UTF-8 bytes
		// Numbers: 1 byte per two significant digits, plus 1; leading
		// and trailing zeroes do not count.
		{`{"n":{"N":"1"}}`, 1 + 2},
		{`{"n":{"N":"12"}}`, 1 + 2},
		{`{"n":{"N":"123"}}`, 1 + 3},
		{`{"n":{"N":"1796571450000"}}`, 1 + 6}, // 9 significant digits
		{`{"n":{"N":"-0.00120"}}`, 1 + 2},
		{`{"n":{"N":"0"}}`, 1 + 1},
		{`{"b":{"B":"AAECAw=="}}`, 1 + 4}, // raw bytes, not base64
		{`{"ok":{"BOOL":true},"no":{"NULL":true}}`, 2 + 1 + 2 + 1},
		// A map: 3 bytes, and each element its name, its value and 1.
		{`{"m":{"M":{}}}`, 1 + 3},
		{`{"m":{"M":{"a":{"S":"xy"},"b":{"N":"5"}}}}`, 1 + 3 + (1 + 2 + 1) + (1 + 2 + 1)},
		// A list: 3 bytes, and each element its value and 1.
		{`{"l":{"L":[{"S":"x"},{"BOOL":false}]}}`, 1 + 3 + (1 + 1) + (1 + 1)},
		{`{"ss":{"SS":["ab","c"]},"ns":{"NS":["10","2"]}}`, 2 + 3 + 2 + (2 + 2)},
	} {
		var it Item
		if err := json.Unmarshal([]byte(c.item), &it); err != nil {
			t.Fatal(err)
		}
		got, err := ItemSize(it)
		if err != nil || got != c.want {
			t.Errorf("ItemSize(%s) = %d, %v; want %d", c.item, got, err, c.want)
		}
	}
	var bad Item
	json.Unmarshal([]byte(`{"x":{"Q":"1"}}`), &bad)
	if _, err := ItemSize(bad); err == nil {
		t.Error("an unknown attribute type was sized")
	}
}

// TestUnits: a write unit per KB started, a read unit per 4 KB started,
// at least one (an item that does not exist included).
func TestUnits(t *testing.T) {
	for _, c := range []struct{ size, write, read int }{
		{0, 1, 1}, {1, 1, 1}, {1024, 1, 1}, {1025, 2, 1}, {4096, 4, 1}, {4097, 5, 2}, {400 * 1024, 400, 100},
	} {
		if w, r := WriteUnits(c.size), ReadUnits(c.size); w != c.write || r != c.read {
			t.Errorf("%d bytes: %d write units, %d read units; want %d, %d", c.size, w, r, c.write, c.read)
		}
	}
}

// TestDollars: amounts round to cents half up, exactly (no float on the
// way), with thousands separated.
func TestDollars(t *testing.T) {
	for _, c := range []struct {
		amount *big.Rat
		want   string
	}{
		{big.NewRat(0, 1), "$0.00"},
		{big.NewRat(625, 1000), "$0.63"},
		{big.NewRat(4375, 1000), "$4.38"},
		{big.NewRat(4374999, 1000000), "$4.37"},
		{big.NewRat(1, 300), "under $0.01"},
		{big.NewRat(12345678, 100), "$123,456.78"},
		{Million(DynamoDBWrites.Of(Int(7))), "$4.38"},
		{Million(DynamoDBReads.Of(big.NewRat(1, 2))), "$0.06"},
		{Million(KMSRequests.Of(Int(1))), "$3.00"},
	} {
		if got := Dollars(c.amount); got != c.want {
			t.Errorf("Dollars(%s) = %s, want %s", c.amount.FloatString(8), got, c.want)
		}
	}
}

// TestPrices: every price parses, says its source and when it was taken.
func TestPrices(t *testing.T) {
	for _, p := range AllPrices {
		if _, ok := new(big.Rat).SetString(p.Amount); !ok || p.Per < 1 || p.What == "" || p.Unit == "" || p.Source == "" || p.Taken == "" {
			t.Errorf("price %+v", *p)
		}
	}
}

// TestLineBytes: the values that vary between two calls of one kind are
// counted at fixed widths, the rest as written; a line whose EMF
// CloudWatch would not read is refused.
func TestLineBytes(t *testing.T) {
	line := func(time, ms string) string {
		return `{"time":"` + time + `","msg":"request","duration_ms":` + ms + `,"Function":"f","Latency":` + ms +
			`,"_aws":{"Timestamp":1796571449998,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["Function"]],"Metrics":[{"Name":"Latency","Unit":"Milliseconds"}]}]}}`
	}
	a, err := LineBytes(line("2026-12-06T15:37:29.998683616Z", "0.536"), 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LineBytes(line("2026-12-06T15:37:29.99868Z", "123.5"), 0)
	if err != nil {
		t.Fatal(err)
	}
	long := line("2026-12-06T15:37:29.998683616Z", "12.345")
	if a != b || a != len(long) {
		t.Errorf("the same line counted %d and %d bytes, want %d", a, b, len(long))
	}
	if n, _ := LineBytes(long, 54); n != len(long)+54 {
		t.Errorf("with 54 bytes added: %d", n)
	}
	plain := `{"time":"2026-12-06T15:37:30.648Z","level":"INFO","msg":"note added"}`
	if n, err := LineBytes(plain, 0); err != nil || n != len(plain)+TimeWidth-len("2026-12-06T15:37:30.648Z") {
		t.Errorf("a line without metrics: %d, %v", n, err)
	}
	if _, err := LineBytes(`{"msg":"x","_aws":{"Timestamp":1}}`, 0); err == nil {
		t.Error("a line with broken EMF was counted")
	}
}

// TestAnswerBytes: a timestamp that is a JSON string, as it is or inside
// an escaped JSON text, counts as milliseconds whatever its digits.
func TestAnswerBytes(t *testing.T) {
	a := `{"created":"2026-12-06T15:37:30.35Z","text":"{\"created\":\"2026-12-06T15:37:30Z\"}","md":"(2026-12-06T15:37:30Z)"}`
	b := `{"created":"2026-12-06T15:37:30.355Z","text":"{\"created\":\"2026-12-06T15:37:30.100Z\"}","md":"(2026-12-06T15:37:30Z)"}`
	if AnswerBytes([]byte(a)) != len(b) || AnswerBytes([]byte(b)) != len(b) {
		t.Errorf("%d and %d bytes, want %d", AnswerBytes([]byte(a)), AnswerBytes([]byte(b)), len(b))
	}
}

// TestSection: the section between the markers is read and replaced,
// nothing else changes; a document without them, or with two, is
// refused.
func TestSection(t *testing.T) {
	doc := "# Deploy\n\nText.\n" + BeginMarker + "\nold\ntable\n" + EndMarker + "\n\nMore text.\n"
	got, err := Section([]byte(doc))
	if err != nil || string(got) != "old\ntable\n" {
		t.Fatalf("Section: %q, %v", got, err)
	}
	out, err := ReplaceSection([]byte(doc), []byte("new\n"))
	if want := strings.Replace(doc, "old\ntable\n", "new\n", 1); err != nil || string(out) != want {
		t.Fatalf("ReplaceSection: %q, %v", out, err)
	}
	for _, bad := range []string{"no markers\n", doc + doc, EndMarker + "\n" + BeginMarker + "\n"} {
		if _, err := Section([]byte(bad)); err == nil {
			t.Errorf("Section of %q", bad)
		}
	}
}

// TestParseTemplate reads template.yaml as the cost tables do: its alarms
// with their conditions, its KMS key, the functions' memory and
// architecture.
func TestParseTemplate(t *testing.T) {
	small := `Conditions:
  On: !Equals [a, b]
Globals:
  Api:
    MemorySize: 1
  Function:
    Runtime: provided.al2023
    Architectures: [arm64]
    MemorySize: 256
Resources:
  One:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Type: not this
  Two:
    Type: AWS::CloudWatch::Alarm
    Condition: On # a comment
  Key:
    Type: AWS::KMS::Key
Outputs:
  X:
    Value: 1
`
	tm, err := ParseTemplate([]byte(small))
	if err != nil {
		t.Fatal(err)
	}
	alarms := tm.OfType("AWS::CloudWatch::Alarm")
	if tm.MemoryMB != 256 || tm.Architecture != "arm64" || len(alarms) != 2 || alarms[0].Condition != "" || alarms[1].Condition != "On" ||
		len(tm.OfType("AWS::KMS::Key")) != 1 || len(tm.Resources) != 3 {
		t.Errorf("%+v", tm)
	}
	b, err := os.ReadFile("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if tm, err = ParseTemplate(b); err != nil {
		t.Fatal(err)
	}
	always := 0
	for _, a := range tm.OfType("AWS::CloudWatch::Alarm") {
		if a.Condition == "" {
			always++
		}
	}
	if always == 0 || len(tm.OfType("AWS::Serverless::Function")) == 0 || len(tm.OfType("AWS::KMS::Key")) != 1 || tm.MemoryMB == 0 {
		t.Errorf("template.yaml: %d alarms always, %+v", always, tm)
	}
}

// TestDescribe names a call's requests, its own first, then each
// quota's, the same ones counted.
func TestDescribe(t *testing.T) {
	ops := []Op{
		{Name: "UpdateItem", Items: []ItemUse{{Prefix: "rate#", Write: true}}, WriteUnits: 1},
		{Name: "PutItem", Items: []ItemUse{{Prefix: "claim#", Write: true}}, WriteUnits: 1},
		{Name: "TransactWriteItems", Items: []ItemUse{{Prefix: "claim#"}, {Prefix: "notes#"}}, Failed: "TransactionCanceledException", WriteUnits: 4},
		{Name: "PutItem", Items: []ItemUse{{Prefix: "claim#", Write: true}}, WriteUnits: 1},
		{Name: "GetItem", Items: []ItemUse{{Prefix: "notes#"}}, ReadHalves: 2},
	}
	if got, want := describe(ops), "PutItem ×2, TransactWriteItems (2 items, cancelled), GetItem; calls quota: UpdateItem"; got != want {
		t.Errorf("describe: %q, want %q", got, want)
	}
	w, qw, h, qh := (Call{Ops: ops}).Units()
	if w != 6 || qw != 1 || h != 2 || qh != 0 {
		t.Errorf("units %d %d %d %d", w, qw, h, qh)
	}
	if describe(nil) != "none" {
		t.Error("no requests")
	}
}

// TestRender prices counts it is given: the units, the bytes, the
// invocations and the requests, each figure rounded once.
func TestRender(t *testing.T) {
	tm, err := ParseTemplate([]byte("Globals:\n  Function:\n    Architectures: [arm64]\n    MemorySize: 256\nResources:\n" +
		"  A:\n    Type: AWS::CloudWatch::Alarm\n  B:\n    Type: AWS::CloudWatch::Alarm\n    Condition: DeployStreaming\n  K:\n    Type: AWS::KMS::Key\n"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(prefix string, units int) Op {
		return Op{Name: "UpdateItem", Items: []ItemUse{{Prefix: prefix, Write: true}}, WriteUnits: units}
	}
	keyed := Call{Name: "keyed", Ops: []Op{
		{Name: "TransactWriteItems", Items: []ItemUse{{Prefix: "claim#"}, {Prefix: "notes#"}, {Prefix: "notes#"}}, WriteUnits: 6},
		write("rate#", 1),
	}, LogBytes: 1400, AnswerBytes: 600, Invocations: 1, GatewayRequests: 1}
	r := &Report{
		Calls:      []Call{keyed},
		FirstSeal:  map[string]int{"GenerateDataKey": 1},
		Stream:     []Op{write("slots#streams#", 1), write("slots#streams#", 1)},
		Catalog:    []Op{write("catalog#", 1)},
		Series:     map[string]Series{"a": {Name: "ToolDuration", Dimensions: map[string]string{"Tool": "x"}}, "b": {Name: "Requests"}},
		Template:   tm,
		TraceBytes: 54,
	}
	out := string(r.Render())
	for _, want := range []string{
		"| keyed | TransactWriteItems (3 items); calls quota: UpdateItem | 6 + 1 | 0 | 0 | 1,400 | 600 |",
		// 7 write units: $4.375; logs (1,400 + 600 bytes) at $0.50 a GB:
		// $1.00; 600 bytes out at $0.09 a GB: $0.054; with Lambda's
		// $0.2333 and the HTTP API's $1.00: $6.66.
		"| keyed | $4.38 | $1.00 | $0.05 | $6.66 |",
		"the streams quota's UpdateItem ×2: 2 write units",
		"| the streams quota, on the streaming door (UpdateItem ×2) | $0.625 per million write request units | $1.25 |",
		"| Lambda duration, arm64, 256 MB (template.yaml), 10 ms billed a warm call (not measured: the cloud's) | $0.0000133334 per GB-second | $0.03",
		"2 series from", "by tool: `x` 1;",
		"| 1 always, 1 more with the streaming door: $0.10 to $0.20 |",
		"| the KMS key | $1.00 per key-month | 1: $1.00 |",
		"each second of it beyond the 10 ms counted here adds $3.33 a million tasks",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if !strings.HasPrefix(out, "\n") || !strings.HasSuffix(out, "|\n\n") {
		t.Error("the section is not set off by blank lines")
	}
}
