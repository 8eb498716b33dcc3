package emfcheck

import (
	"strings"
	"testing"
)

const valid = `{"Function":"f","Method":"tools/call","Requests":1,"Latency":[1.5,2],"_aws":{"Timestamp":1764460800000,"CloudWatchMetrics":[{"Namespace":"ns","Dimensions":[["Function"],["Function","Method"]],"Metrics":[{"Name":"Requests","Unit":"Count"},{"Name":"Latency","Unit":"Milliseconds"}]}]}}`

func TestValid(t *testing.T) {
	ms, err := Check([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	// Two metrics, each under two dimension sets.
	if len(ms) != 4 || ms[0].Name != "Requests" || ms[0].Value != 1 || ms[1].Dimensions["Method"] != "tools/call" || ms[2].Value != 1.5 {
		t.Errorf("got %+v", ms)
	}
}

// TestInvalid proves the checker refuses each way a line can break the
// specification.
func TestInvalid(t *testing.T) {
	tests := []struct{ name, from, to, want string }{
		{"trailing data", `"Milliseconds"}]}]}}`, `"Milliseconds"}]}]}} x`, "after"},
		{"no _aws", `"_aws"`, `"_awz"`, `no "_aws"`},
		{"string timestamp", `1764460800000`, `"1764460800000"`, "Timestamp"},
		{"fractional timestamp", `1764460800000`, `1764460800000.5`, "integer"},
		{"extra metadata member", `"Timestamp"`, `"LogGroup":"x","Timestamp"`, "unexpected"},
		{"empty namespace", `"Namespace":"ns"`, `"Namespace":""`, "Namespace"},
		{"dimension not a member", `["Function","Method"]`, `["Function","Tool"]`, `"Tool"`},
		{"dimension not a string", `"Function":"f"`, `"Function":7`, `"Function"`},
		{"metric missing", `{"Name":"Latency"`, `{"Name":"Errors"`, `"Errors"`},
		{"metric not a number", `"Requests":1`, `"Requests":"1"`, `"Requests"`},
		{"bad unit", `"Unit":"Count"`, `"Unit":"count"`, "unit"},
		{"extra definition member", `{"Name":"Requests",`, `{"Name":"Requests","Kind":"x",`, "member"},
		{"no metrics", `"Metrics":[{"Name":"Requests","Unit":"Count"},{"Name":"Latency","Unit":"Milliseconds"}]`, `"Metrics":[]`, "Metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(valid, tt.from) {
				t.Fatalf("%q not in the valid line", tt.from)
			}
			_, err := Check([]byte(strings.Replace(valid, tt.from, tt.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}
