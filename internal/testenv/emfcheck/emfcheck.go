// Package emfcheck validates log lines against the CloudWatch embedded
// metric format (EMF) specification, for tests: a line CloudWatch Logs
// would not extract metrics from is a metric silently lost, and nothing
// in the cloud reports it to the writer.
//
// The rules checked are the specification's: the line is one JSON object
// with no data around it; its "_aws" member is an object with exactly
// "Timestamp" (a number of milliseconds since the epoch) and
// "CloudWatchMetrics" (an array of metric directives); a directive has
// exactly "Namespace" (1-255 characters), "Dimensions" (an array of
// dimension sets, each an array of at most 30 member names) and "Metrics"
// (at most 100 metric definitions, each with exactly "Name" and an
// optional "Unit" from the CloudWatch units, plus an optional
// "StorageResolution" of 1 or 60); every dimension name is a member of the
// root whose value is a string, and every metric name a member whose value
// is a number or an array of at most 100 numbers.
package emfcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Units are the units CloudWatch accepts.
var units = map[string]bool{
	"Seconds": true, "Microseconds": true, "Milliseconds": true,
	"Bytes": true, "Kilobytes": true, "Megabytes": true, "Gigabytes": true, "Terabytes": true,
	"Bits": true, "Kilobits": true, "Megabits": true, "Gigabits": true, "Terabits": true,
	"Percent": true, "Count": true,
	"Bytes/Second": true, "Kilobytes/Second": true, "Megabytes/Second": true, "Gigabytes/Second": true, "Terabytes/Second": true,
	"Bits/Second": true, "Kilobits/Second": true, "Megabits/Second": true, "Gigabits/Second": true, "Terabits/Second": true,
	"Count/Second": true, "None": true,
}

// Metric is one metric value extracted from a line, with its dimensions.
type Metric struct {
	Namespace  string
	Name       string
	Unit       string
	Value      float64
	Dimensions map[string]string
}

// Check validates line (one log event, without its newline) and returns
// the metrics CloudWatch would extract: one per metric per dimension set.
func Check(line []byte) ([]Metric, error) {
	line = bytes.TrimSpace(line)
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if dec.More() || dec.InputOffset() != int64(len(line)) {
		return nil, errors.New("data after the JSON object")
	}
	aws, ok := root["_aws"].(map[string]any)
	if !ok {
		return nil, errors.New(`no "_aws" object`)
	}
	if err := exactly(aws, "Timestamp", "CloudWatchMetrics"); err != nil {
		return nil, fmt.Errorf("_aws: %w", err)
	}
	ts, ok := aws["Timestamp"].(json.Number)
	if !ok {
		return nil, errors.New("_aws.Timestamp is not a number")
	}
	if _, err := ts.Int64(); err != nil {
		return nil, fmt.Errorf("_aws.Timestamp is not an integer of milliseconds: %s", ts)
	}
	dirs, ok := aws["CloudWatchMetrics"].([]any)
	if !ok || len(dirs) == 0 {
		return nil, errors.New("_aws.CloudWatchMetrics is not a non-empty array")
	}
	var out []Metric
	for i, d := range dirs {
		dir, ok := d.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("directive %d is not an object", i)
		}
		if err := exactly(dir, "Namespace", "Dimensions", "Metrics"); err != nil {
			return nil, fmt.Errorf("directive %d: %w", i, err)
		}
		ns, ok := dir["Namespace"].(string)
		if !ok || len(ns) == 0 || len(ns) > 255 {
			return nil, fmt.Errorf("directive %d: Namespace must be 1-255 characters", i)
		}
		sets, ok := dir["Dimensions"].([]any)
		if !ok {
			return nil, fmt.Errorf("directive %d: Dimensions is not an array", i)
		}
		var dimSets []map[string]string
		for j, s := range sets {
			names, ok := s.([]any)
			if !ok || len(names) > 30 {
				return nil, fmt.Errorf("directive %d: dimension set %d is not an array of at most 30 names", i, j)
			}
			set := map[string]string{}
			for _, n := range names {
				name, ok := n.(string)
				if !ok {
					return nil, fmt.Errorf("directive %d: dimension set %d has a name that is not a string", i, j)
				}
				v, ok := root[name].(string)
				if !ok {
					return nil, fmt.Errorf("directive %d: dimension %q is not a string member of the root", i, name)
				}
				if v == "" || len(v) > 1024 {
					return nil, fmt.Errorf("directive %d: dimension %q has an empty or over-long value", i, name)
				}
				set[name] = v
			}
			dimSets = append(dimSets, set)
		}
		if len(dimSets) == 0 {
			dimSets = []map[string]string{{}}
		}
		metrics, ok := dir["Metrics"].([]any)
		if !ok || len(metrics) == 0 || len(metrics) > 100 {
			return nil, fmt.Errorf("directive %d: Metrics is not an array of 1-100 definitions", i)
		}
		for _, m := range metrics {
			def, ok := m.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("directive %d: a metric definition is not an object", i)
			}
			for k := range def {
				if k != "Name" && k != "Unit" && k != "StorageResolution" {
					return nil, fmt.Errorf("directive %d: metric definition has member %q", i, k)
				}
			}
			name, ok := def["Name"].(string)
			if !ok || name == "" || len(name) > 1024 {
				return nil, fmt.Errorf("directive %d: metric Name must be 1-1024 characters", i)
			}
			unit := "None"
			if u, present := def["Unit"]; present {
				s, ok := u.(string)
				if !ok || !units[s] {
					return nil, fmt.Errorf("directive %d: metric %q has unit %v, not a CloudWatch unit", i, name, u)
				}
				unit = s
			}
			if r, present := def["StorageResolution"]; present {
				if n, ok := r.(json.Number); !ok || (n.String() != "1" && n.String() != "60") {
					return nil, fmt.Errorf("directive %d: metric %q has StorageResolution %v", i, name, r)
				}
			}
			value, err := number(root[name])
			if err != nil {
				return nil, fmt.Errorf("directive %d: metric %q: %w", i, name, err)
			}
			for _, set := range dimSets {
				out = append(out, Metric{Namespace: ns, Name: name, Unit: unit, Value: value, Dimensions: set})
			}
		}
	}
	return out, nil
}

// number reads a metric member: a number, or an array of at most 100
// numbers (whose first is returned).
func number(v any) (float64, error) {
	switch v := v.(type) {
	case json.Number:
		return v.Float64()
	case []any:
		if len(v) == 0 || len(v) > 100 {
			return 0, errors.New("value array must hold 1-100 numbers")
		}
		var first float64
		for i, e := range v {
			n, ok := e.(json.Number)
			if !ok {
				return 0, errors.New("value array holds a non-number")
			}
			f, err := n.Float64()
			if err != nil {
				return 0, err
			}
			if i == 0 {
				first = f
			}
		}
		return first, nil
	case nil:
		return 0, errors.New("not a member of the root")
	}
	return 0, fmt.Errorf("value %v is not a number", v)
}

// exactly checks that obj has the keys given and no others.
func exactly(obj map[string]any, keys ...string) error {
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			return fmt.Errorf("missing %q", k)
		}
	}
	if len(obj) != len(keys) {
		for k := range obj {
			found := false
			for _, want := range keys {
				found = found || k == want
			}
			if !found {
				return fmt.Errorf("unexpected member %q", k)
			}
		}
	}
	return nil
}
