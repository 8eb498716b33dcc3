package observe

import (
	"encoding/json"
)

// variant says which optional metrics a line carries; each combination
// has its own EMF metadata, built once.
type variant uint8

const (
	withTool    variant = 1 << iota // ToolDuration, by Function and Tool
	withClaim                       // Claims, by Function and ClaimOutcome
	withKMS                         // KMSCalls
	withCold                        // ColdStart
	numVariants = 1 << iota
)

// The EMF metadata, per the CloudWatch embedded metric format
// specification: each MetricDirective names a namespace, dimension sets
// (arrays of member names of the root object, whose values are strings)
// and metrics (member names of the root object, whose values are
// numbers), each with a unit. A directive may only name members the line
// has, so optional metrics are in directives of their own.
type metricDirective struct {
	Namespace  string         `json:"Namespace"`
	Dimensions [][]string     `json:"Dimensions"`
	Metrics    []metricDefine `json:"Metrics"`
}

type metricDefine struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

// directive returns the CloudWatchMetrics array for variant v.
func (ob *Observer) directive(v variant) []byte {
	if p := ob.directives[v].Load(); p != nil {
		return *p
	}
	b := buildDirectives(ob.opts.Namespace, v)
	ob.directives[v].Store(&b)
	return b
}

func buildDirectives(ns string, v variant) []byte {
	fn := []string{"Function"}
	base := []metricDefine{{"Faults", "Count"}}
	if v&withKMS != 0 {
		base = append(base, metricDefine{"KMSCalls", "Count"})
	}
	if v&withCold != 0 {
		base = append(base, metricDefine{"ColdStart", "Count"})
	}
	ds := []metricDirective{
		{ns, [][]string{fn, {"Function", "Method", "Outcome"}}, []metricDefine{{"Requests", "Count"}}},
		{ns, [][]string{fn}, base},
		{ns, [][]string{{"Function", "Method"}}, []metricDefine{{"Latency", "Milliseconds"}}},
	}
	if v&withTool != 0 {
		ds = append(ds, metricDirective{ns, [][]string{{"Function", "Tool"}}, []metricDefine{{"ToolDuration", "Milliseconds"}}})
	}
	if v&withClaim != 0 {
		ds = append(ds, metricDirective{ns, [][]string{{"Function", "ClaimOutcome"}}, []metricDefine{{"Claims", "Count"}}})
	}
	b, err := json.Marshal(ds)
	if err != nil {
		panic("observe: EMF metadata does not marshal: " + err.Error())
	}
	return b
}
