package apigw

import "testing"

// TestSourceAddress: the caller's address is the one the gateway reports
// in its request context — http.sourceIp for an HTTP API or a function
// URL, identity.sourceIp for a REST API — and never X-Forwarded-For, which
// the client writes; anything that is not an IP address is no address.
func TestSourceAddress(t *testing.T) {
	for _, tt := range []struct{ name, payload, want string }{
		{"http api", `{"version":"2.0","headers":{"x-forwarded-for":"203.0.113.9"},"requestContext":{"http":{"method":"POST","sourceIp":"198.51.100.7"}}}`, "198.51.100.7"},
		{"function url, v6", `{"version":"2.0","requestContext":{"domainName":"u.lambda-url.us-east-1.on.aws","http":{"method":"POST","sourceIp":"2001:DB8::1"}}}`, "2001:db8::1"},
		{"rest", `{"httpMethod":"POST","multiValueHeaders":{"X-Forwarded-For":["203.0.113.9"]},"requestContext":{"identity":{"sourceIp":"198.51.100.8","userAgent":"x"}}}`, "198.51.100.8"},
		{"rest, http member ignored", `{"httpMethod":"POST","requestContext":{"http":{"method":"POST","sourceIp":"198.51.100.7"}}}`, ""},
		{"forwarded only", `{"version":"2.0","headers":{"x-forwarded-for":"203.0.113.9"},"requestContext":{"http":{"method":"POST"}}}`, ""},
		{"not an address", `{"version":"2.0","requestContext":{"http":{"method":"POST","sourceIp":"203.0.113.9, 10.0.0.1"}}}`, ""},
	} {
		r, err := Decode([]byte(tt.payload))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if r.Address != tt.want {
			t.Errorf("%s: address %q, want %q", tt.name, r.Address, tt.want)
		}
	}
}
