package apigw

import (
	"encoding/json"
	"testing"
)

// The event's own member names match as encoding/json matches them: in any
// case, an exact match first, underscores and dashes not ignored.
func TestDecodeEventNamesAsEncodingJSON(t *testing.T) {
	for _, payload := range []string{
		`{"version":"2.0","requestContext":{"http":{"method":"POST"}},"isBAse64EnCoded":true,"BodY":"e30="}`,
		`{"VERSION":"2.0","RequestContext":{"http":{"method":"POST"}},"body":"{}"}`,
		`{"HttpMethod":"POST","Body":"{}"}`,
		`{"httpMethod":"POST","body":"a","Body":"b"}`,
		`{"httpMethod":"POST","Body":"b","body":"a"}`,
		`{"httpMethod":"POST","is_base64_encoded":true,"bo-dy":"e30=","body":"x"}`,
	} {
		var ev struct {
			Body            string `json:"body"`
			IsBase64Encoded bool   `json:"isBase64Encoded"`
		}
		if err := json.Unmarshal([]byte(payload), &ev); err != nil {
			t.Fatal(err)
		}
		want := ev.Body
		if ev.IsBase64Encoded {
			want = "{}"
		}
		r, err := Decode([]byte(payload))
		if err != nil {
			t.Errorf("%s: %v", payload, err)
			continue
		}
		if string(r.Body) != want {
			t.Errorf("%s: body %q, encoding/json reads %q", payload, r.Body, want)
		}
	}
}
