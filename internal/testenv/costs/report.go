package costs

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
)

// What cannot be measured here, taken as constants.
const (
	// WarmBilledMs is a warm call's billed duration in the cloud. Not
	// measured: the emulator's timings are this machine's, with DynamoDB
	// on loopback. Lambda bills duration by the millisecond ("AWS Lambda
	// pricing"); a warm call of the note book is the function's own
	// fraction of a millisecond (docs/performance.md, "Warm invocations")
	// and a few DynamoDB round trips of a few milliseconds each.
	WarmBilledMs = 10
	// AuthorizerBilledMs is the streaming door's authorizer's billed
	// duration, warm: a token checked against a cached key set, no AWS
	// call.
	AuthorizerBilledMs = 2
	// PlatformLogBytes are the lines Lambda itself writes per
	// invocation in the template's JSON log format (platform.start and
	// platform.report, the latter with the X-Ray segment; Lambda
	// developer guide, "Configuring JSON and plain text log formats").
	// The emulator writes other lines of its own, so they are not
	// measured here.
	PlatformLogBytes = 600
)

// Per call, by definition: each request through a door is one gateway
// request ("Amazon API Gateway pricing": HTTP APIs meter a request per
// 512 KB, and every answer here is far below) and one Lambda invocation
// ("AWS Lambda pricing": a request is each start of an execution).
const (
	GatewayRequestsPerCall = 1
	InvocationsPerCall     = 1
)

// QuotaPrefixes name the quotas' items and what the tables call them:
// package ratelimit's call counters and live slots.
var QuotaPrefixes = map[string]string{
	"rate#":          "calls quota",
	"slots#tasks#":   "tasks quota",
	"slots#streams#": "streams quota",
}

// Call is what one kind of call used, as measured.
type Call struct {
	// Name is the call as the tables name it (Markdown).
	Name string
	// Ops are its DynamoDB requests, in order.
	Ops []Op
	// KMS are its KMS requests, by operation.
	KMS map[string]int
	// LogBytes are the bytes of the lines the function wrote for it
	// (LineBytes); AnswerBytes those of its answer (AnswerBytes, and the
	// headers the function set).
	LogBytes, AnswerBytes int
	// Invocations are its Lambda invocations, GatewayRequests its
	// requests through a door.
	Invocations, GatewayRequests int
	// Part is a part of a composite (a task's worker, one poll): in the
	// table of counts, not priced alone.
	Part bool
}

// quota reports whether op writes a quota's item.
func quota(op Op) string {
	for _, it := range op.Items {
		if q, ok := QuotaPrefixes[it.Prefix]; ok {
			return q
		}
	}
	return ""
}

// Units are a call's write units and read units (in halves), its own
// and its quotas'.
func (c Call) Units() (write, quotaWrite, readHalves, quotaReadHalves int) {
	for _, op := range c.Ops {
		if quota(op) != "" {
			quotaWrite += op.WriteUnits
			quotaReadHalves += op.ReadHalves
		} else {
			write += op.WriteUnits
			readHalves += op.ReadHalves
		}
	}
	return
}

// Compose adds calls up into one: a task with its worker and its polls.
func Compose(name string, parts ...Call) Call {
	c := Call{Name: name, KMS: map[string]int{}}
	for _, p := range parts {
		c.Ops = append(c.Ops, p.Ops...)
		for k, v := range p.KMS {
			c.KMS[k] += v
		}
		c.LogBytes += p.LogBytes
		c.AnswerBytes += p.AnswerBytes
		c.Invocations += p.Invocations
		c.GatewayRequests += p.GatewayRequests
	}
	return c
}

// Report is what the cost tables are rendered from.
type Report struct {
	// Calls are the kinds of call measured, in the tables' order.
	Calls []Call
	// FirstSeal and ForeignOpen are the KMS requests of an instance's
	// first seal and of its first opening of a state another instance
	// sealed.
	FirstSeal, ForeignOpen map[string]int
	// Stream are the streams quota's requests of one call on the
	// streaming door.
	Stream []Op
	// Catalog are the requests of an instance's first request that
	// record its catalog.
	Catalog []Op
	// Series are the metric series the measured calls put data in.
	Series map[string]Series
	// SeriesCalls says what calls the series come from.
	SeriesCalls string
	// TraceBytes are the bytes the X-Ray trace id adds to a line.
	TraceBytes int
	Template   *Template
}

// describe writes a call's DynamoDB requests: its own, then each
// quota's.
func describe(ops []Op) string {
	var own []Op
	byQuota := map[string][]Op{}
	var quotas []string
	for _, op := range ops {
		q := quota(op)
		if q == "" {
			own = append(own, op)
			continue
		}
		if _, seen := byQuota[q]; !seen {
			quotas = append(quotas, q)
		}
		byQuota[q] = append(byQuota[q], op)
	}
	var parts []string
	if len(own) > 0 {
		parts = append(parts, names(own))
	}
	for _, q := range quotas {
		parts = append(parts, q+": "+names(byQuota[q]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// names writes requests by operation, the same ones counted once each
// ("GetItem ×2").
func names(ops []Op) string {
	var order []string
	count := map[string]int{}
	for _, op := range ops {
		n := op.Name
		var notes []string
		if strings.HasPrefix(n, "Transact") || strings.HasPrefix(n, "Batch") {
			notes = append(notes, plural(len(op.Items), "item"))
		}
		switch op.Failed {
		case "":
		case "TransactionCanceledException":
			notes = append(notes, "cancelled")
		case "ConditionalCheckFailedException":
			notes = append(notes, "refused by its condition")
		default:
			notes = append(notes, op.Failed)
		}
		if len(notes) > 0 {
			n += " (" + strings.Join(notes, ", ") + ")"
		}
		if count[n] == 0 {
			order = append(order, n)
		}
		count[n]++
	}
	for i, n := range order {
		if count[n] > 1 {
			order[i] = fmt.Sprintf("%s ×%d", n, count[n])
		}
	}
	return strings.Join(order, ", ")
}

// plural writes n things.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%s %ss", Count(n), thing)
}

// halves writes read units given in halves.
func halves(n int) string {
	if n%2 == 0 {
		return fmt.Sprint(n / 2)
	}
	return fmt.Sprintf("%d.5", n/2)
}

// withQuota writes own units and a quota's: "6 + 1".
func withQuota(own, q string) string {
	if q == "0" {
		return own
	}
	return own + " + " + q
}

func kmsText(ops map[string]int) string {
	if len(ops) == 0 {
		return "0"
	}
	var parts []string
	for _, k := range mapsKeys(ops) {
		parts = append(parts, fmt.Sprintf("%d %s", ops[k], k))
	}
	return strings.Join(parts, ", ")
}

func mapsKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Costs per million calls of a kind.
type million struct {
	dynamo, logs, out, lambda, gateway *big.Rat
}

func (m million) total() *big.Rat { return Sum(m.dynamo, m.logs, m.out, m.lambda, m.gateway) }

// lambdaCall is one warm invocation's Lambda price: its request and its
// billed duration at the template's memory.
func (r *Report) lambdaCall(ms int) *big.Rat {
	gbSeconds := new(big.Rat).Mul(big.NewRat(int64(ms), 1000), big.NewRat(int64(r.Template.MemoryMB), 1024))
	return Sum(LambdaRequests.Of(Int(1)), LambdaArmDuration.Of(gbSeconds))
}

func (r *Report) perMillion(c Call) million {
	w, qw, h, qh := c.Units()
	logBytes := Int(c.LogBytes + PlatformLogBytes*c.Invocations)
	return million{
		dynamo:  Million(Sum(DynamoDBWrites.Of(Int(w+qw)), DynamoDBReads.Of(big.NewRat(int64(h+qh), 2)))),
		logs:    Million(LogsIngested.Of(new(big.Rat).Quo(logBytes, Int(GB)))),
		out:     Million(DataTransferOut.Of(new(big.Rat).Quo(Int(c.AnswerBytes), Int(GB)))),
		lambda:  Million(new(big.Rat).Mul(r.lambdaCall(WarmBilledMs), Int(c.Invocations))),
		gateway: Million(HTTPAPIRequests.Of(Int(c.GatewayRequests))),
	}
}

// writeUnitsOf are the write units of ops.
func writeUnitsOf(ops []Op) int {
	n := 0
	for _, op := range ops {
		n += op.WriteUnits
	}
	return n
}

// Render writes the cost tables: what each kind of call uses, what a
// million of each costs, what every call costs whatever it is, and what
// the template costs by the month, and the prices.
func (r *Report) Render() []byte {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("\nWhat one call uses, measured (DynamoDB's write and read request units; the quotas' after the +):\n\n")
	p("| call | DynamoDB requests | write units | read units | KMS requests | log bytes | answer bytes |\n")
	p("|---|---|---:|---:|---:|---:|---:|\n")
	for _, c := range r.Calls {
		w, qw, h, qh := c.Units()
		p("| %s | %s | %s | %s | %s | %s | %s |\n", c.Name, describe(c.Ops), withQuota(fmt.Sprint(w), fmt.Sprint(qw)),
			withQuota(halves(h), halves(qh)), kmsText(c.KMS), Count(c.LogBytes), Count(c.AnswerBytes))
	}
	p("\nKMS is per instance, not per call: an instance's first seal (and one after each rotation, an hour or 1,000,000 seals) %s; "+
		"the first state an instance opens that another one sealed, %s (measured on a confirmation sealed on one instance and answered on another). ",
		kmsText(r.FirstSeal), kmsText(r.ForeignOpen))
	p("An instance's first request also records its catalog (%s: %s), once. ", describe(r.Catalog), plural(writeUnitsOf(r.Catalog), "write unit"))
	p("A call on the streaming door adds the streams quota's %s: %s.\n\n", names(r.Stream), plural(writeUnitsOf(r.Stream), "write unit"))

	lambda := Million(r.lambdaCall(WarmBilledMs))
	p("Per million calls of each kind (a task's: per million tasks); the total adds Lambda's %s a million invocations and the HTTP API's %s a million requests (below):\n\n",
		Dollars(lambda), Dollars(Million(HTTPAPIRequests.Of(Int(1)))))
	p("| call | DynamoDB | CloudWatch Logs | data transfer out | total, through the HTTP API |\n")
	p("|---|---:|---:|---:|---:|\n")
	for _, c := range r.Calls {
		if c.Part {
			continue
		}
		m := r.perMillion(c)
		p("| %s | %s | %s | %s | %s |\n", c.Name, Dollars(m.dynamo), Dollars(m.logs), Dollars(m.out), Dollars(m.total()))
	}
	second := Million(new(big.Rat).Sub(r.lambdaCall(WarmBilledMs+1000), r.lambdaCall(WarmBilledMs)))
	p("\nA task's worker is billed for its whole run: each second of it beyond the %d ms counted here adds %s a million tasks (the demo's export runs a minute unless asked otherwise; measured here with `seconds` 0).\n",
		WarmBilledMs, Dollars(second))

	p("\nPer million calls, whatever the call: the first four rows are in each total above, the others are what another door or a setting adds.\n\n")
	p("| what | price | per million calls |\n|---|---|---|\n")
	p("| Lambda requests | %s | %s |\n", LambdaRequests.Text(), Dollars(Million(LambdaRequests.Of(Int(InvocationsPerCall)))))
	dur := new(big.Rat).Sub(lambda, Million(LambdaRequests.Of(Int(1))))
	p("| Lambda duration, %s, %d MB (template.yaml), %d ms billed a warm call (not measured: the cloud's) | %s | %s (cold starts add their init time) |\n",
		r.Template.Architecture, r.Template.MemoryMB, WarmBilledMs, LambdaArmDuration.Text(), Dollars(dur))
	p("| HTTP API (the buffered door) | %s (%s) | %s |\n", HTTPAPIRequests.Text(), HTTPAPIRequests.Note, Dollars(Million(HTTPAPIRequests.Of(Int(GatewayRequestsPerCall)))))
	p("| CloudWatch Logs, Lambda's own lines (about %d bytes an invocation; not measured: the emulator writes lines of its own) | %s %s | %s |\n",
		PlatformLogBytes, LogsIngested.Text(), LogsIngested.Note, Dollars(Million(LogsIngested.Of(big.NewRat(PlatformLogBytes, GB)))))
	p("| REST API (the streaming door), instead of the HTTP API | %s (%s) | %s |\n", RESTAPIRequests.Text(), RESTAPIRequests.Note, Dollars(Million(RESTAPIRequests.Of(Int(GatewayRequestsPerCall)))))
	p("| the streaming door's authorizer, protected (one more invocation per request that carries a token: caching is off; docs/streaming.md), %d ms billed warm | Lambda's requests and duration | %s |\n",
		AuthorizerBilledMs, Dollars(Million(r.lambdaCall(AuthorizerBilledMs))))
	p("| the streams quota, on the streaming door (%s) | %s | %s |\n", names(r.Stream), DynamoDBWrites.Text(), Dollars(Million(DynamoDBWrites.Of(Int(writeUnitsOf(r.Stream))))))
	p("| a function URL, instead of a gateway | no charge beyond Lambda's | %s |\n", Dollars(new(big.Rat)))
	p("| KMS, per instance (above), not per call | %s | %s a million KMS requests |\n", KMSRequests.Text(), Dollars(Million(KMSRequests.Of(Int(1)))))

	p("\nBy the month, whatever the traffic:\n\n")
	p("| what | price | the template's |\n|---|---|---|\n")
	perTool := map[string]int{}
	for _, s := range r.Series {
		if t := s.Dimensions["Tool"]; t != "" {
			perTool[t]++
		}
	}
	var tools []string
	for _, t := range mapsKeys(perTool) {
		tools = append(tools, fmt.Sprintf("`%s` %d", t, perTool[t]))
	}
	p("| EMF metric series: every metric and dimension values combination that got data in the month | %s (%s) | %d series from %s: %s a month; of them, by tool: %s; each other method, outcome or claim outcome met adds one |\n",
		Metrics.Text(), Metrics.Note, len(r.Series), r.SeriesCalls, Dollars(Metrics.Of(Int(len(r.Series)))), strings.Join(tools, ", "))
	p("| CloudWatch alarms (%s) | %s | %s |\n", Alarms.Note, Alarms.Text(), r.alarms())
	keys := len(r.Template.OfType("AWS::KMS::Key"))
	p("| the KMS key | %s | %d: %s |\n", KMSKeys.Text(), keys, Dollars(KMSKeys.Of(Int(keys))))
	p("| DynamoDB storage, point-in-time recovery | %s and %s | claims expire by TTL (24 hours), so the table is small; notes and tasks are what stays |\n",
		DynamoDBStorage.Text(), DynamoDBPITR.Text())
	p("| CloudWatch Logs storage | %s | for `LogRetentionDays` |\n", LogsStored.Text())

	p("\nThe prices, us-east-1 (a GB is 10^9 bytes here):\n\n| what | price | source | taken |\n|---|---|---|---|\n")
	for _, pr := range AllPrices {
		price := pr.Text()
		if pr.Note != "" {
			price += " (" + pr.Note + ")"
		}
		p("| %s | %s | %s | %s |\n", pr.What, price, pr.Source, pr.Taken)
	}
	p("\n")
	return []byte(b.String())
}

// alarmConditions say what a condition of template.yaml's alarms means.
var alarmConditions = map[string]string{
	"DeployStreaming":   "with the streaming door",
	"StreamingMetadata": "when it is protected (AuthIssuer)",
}

// alarms writes the template's alarms: how many always, how many more
// under each condition, and what they cost.
func (r *Report) alarms() string {
	always := 0
	byCond := map[string]int{}
	var conds []string
	for _, a := range r.Template.OfType("AWS::CloudWatch::Alarm") {
		if a.Condition == "" {
			always++
			continue
		}
		if byCond[a.Condition] == 0 {
			conds = append(conds, a.Condition)
		}
		byCond[a.Condition]++
	}
	parts := []string{fmt.Sprintf("%d always", always)}
	for _, c := range conds {
		what, ok := alarmConditions[c]
		if !ok {
			what = "under `" + c + "`"
		}
		parts = append(parts, fmt.Sprintf("%d more %s", byCond[c], what))
	}
	all := len(r.Template.OfType("AWS::CloudWatch::Alarm"))
	cost := Dollars(Alarms.Of(Int(always)))
	if all > always {
		cost += " to " + Dollars(Alarms.Of(Int(all)))
	}
	return strings.Join(parts, ", ") + ": " + cost
}
