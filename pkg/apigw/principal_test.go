package apigw

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// httpEvent is a payload format 2.0 event with the given authorizer
// context ("" for none).
func httpEvent(authorizer string) string {
	ctx := `"http":{"method":"POST","path":"/mcp"},"domainName":"a.execute-api.us-east-1.amazonaws.com"`
	if authorizer != "" {
		ctx += `,"authorizer":` + authorizer
	}
	return `{"version":"2.0","requestContext":{` + ctx + `}}`
}

// restEvent is a payload format 1.0 event with the given authorizer
// context and identity ("" for none).
func restEvent(authorizer, identity string) string {
	ctx := `"path":"/prod/mcp","domainName":"r.execute-api.us-east-1.amazonaws.com"`
	if authorizer != "" {
		ctx += `,"authorizer":` + authorizer
	}
	if identity != "" {
		ctx += `,"identity":` + identity
	}
	return `{"httpMethod":"POST","requestContext":{` + ctx + `}}`
}

// restNoIAM is the identity section of a REST request on a route without
// IAM authorization: every REST event has one.
const restNoIAM = `{"cognitoIdentityPoolId":null,"accountId":null,"cognitoIdentityId":null,"caller":null,"sourceIp":"203.0.113.1","principalOrgId":null,"accessKey":null,"cognitoAuthenticationType":null,"cognitoAuthenticationProvider":null,"userArn":null,"userAgent":"curl/8","user":null}`

const iss = "https://issuer.example.com"

// TestPrincipals pins the principal of every authorizer shape, and that
// every request an authorizer let through without a usable identity is
// unidentified (refused 401), never the anonymous caller.
func TestPrincipals(t *testing.T) {
	const unidentified = "\x00unidentified"
	tests := []struct {
		name, payload, want string
	}{
		// No identity source: the anonymous caller.
		{"http api, no authorizer", httpEvent(""), ""},
		{"http api, null authorizer", httpEvent(`null`), ""},
		{"http api, empty authorizer", httpEvent(`{}`), ""},
		{"rest, no authorizer, no identity", restEvent("", ""), ""},
		{"rest, no authorizer, identity without IAM", restEvent("", restNoIAM), ""},
		{"rest, empty authorizer and identity", restEvent(`{}`, `{}`), ""},
		{"function url, no auth", `{"version":"2.0","requestContext":{"domainName":"u.lambda-url.us-east-1.on.aws","http":{"method":"POST","path":"/"}}}`, ""},

		// HTTP API JWT authorizer.
		{"jwt", httpEvent(`{"jwt":{"claims":{"iss":"` + iss + `","sub":"u-1","aud":"mcp","scope":"notes:read"},"scopes":null}}`), "jwt:" + iss + "#u-1"},
		{"jwt, escaped names and values", httpEvent(`{"jwt":{"claims":{"\u0069ss":"` + iss + `","s\u0075b":"caf\u00e9"}}}`), "jwt:" + iss + "#café"},
		{"jwt, non-string claim elsewhere", httpEvent(`{"jwt":{"claims":{"iss":"` + iss + `","sub":"u-1","exp":1796083200,"groups":["a"]}}}`), "jwt:" + iss + "#u-1"},
		{"jwt, sub anonymous is not the anonymous caller", httpEvent(`{"jwt":{"claims":{"iss":"` + iss + `","sub":"anonymous"}}}`), "jwt:" + iss + "#anonymous"},
		{"jwt without sub", httpEvent(`{"jwt":{"claims":{"iss":"` + iss + `"}}}`), unidentified},
		{"jwt, empty sub", httpEvent(`{"jwt":{"claims":{"iss":"` + iss + `","sub":""}}}`), unidentified},
		{"jwt, null sub", httpEvent(`{"jwt":{"claims":{"iss":"` + iss + `","sub":null}}}`), unidentified},
		{"jwt, numeric sub", httpEvent(`{"jwt":{"claims":{"iss":"` + iss + `","sub":5}}}`), unidentified},
		{"jwt without iss", httpEvent(`{"jwt":{"claims":{"sub":"u-1"}}}`), unidentified},
		{"jwt, empty iss", httpEvent(`{"jwt":{"claims":{"iss":"","sub":"u-1"}}}`), unidentified},
		{"jwt, iss with a fragment", httpEvent(`{"jwt":{"claims":{"iss":"https://a#b","sub":"u-1"}}}`), unidentified},
		{"jwt, sub in another case only", httpEvent(`{"jwt":{"claims":{"iss":"` + iss + `","Sub":"u-1"}}}`), unidentified},
		{"jwt, sub in both cases", httpEvent(`{"jwt":{"claims":{"iss":"` + iss + `","sub":"u-1","SUB":"u-2"}}}`), "jwt:" + iss + "#u-1"},
		{"jwt, sub twice", httpEvent(`{"jwt":{"claims":{"iss":"` + iss + `","sub":"u-1","sub":"u-2"}}}`), unidentified},
		{"jwt without claims", httpEvent(`{"jwt":{"scopes":null}}`), unidentified},
		{"jwt, claims not an object", httpEvent(`{"jwt":{"claims":"x"}}`), unidentified},
		{"jwt null", httpEvent(`{"jwt":null}`), unidentified},

		// IAM (HTTP API and function URLs).
		{"iam", httpEvent(`{"iam":{"accessKey":"AKIA","accountId":"1","callerId":"AID","userArn":"arn:aws:iam::1:user/x","userId":"AID"}}`), "iam:arn:aws:iam::1:user/x"},
		{"function url, iam", `{"version":"2.0","requestContext":{"domainName":"u.lambda-url.us-east-1.on.aws","http":{"method":"POST","path":"/"},"authorizer":{"iam":{"userArn":"arn:aws:sts::1:assumed-role/r/s"}}}}`, "iam:arn:aws:sts::1:assumed-role/r/s"},
		{"iam without userArn", httpEvent(`{"iam":{"accessKey":"AKIA","accountId":"1"}}`), unidentified},
		{"iam, empty userArn", httpEvent(`{"iam":{"userArn":""}}`), unidentified},
		{"iam, userArn in another case only", httpEvent(`{"iam":{"UserArn":"arn:aws:iam::1:user/x"}}`), unidentified},

		// HTTP API Lambda authorizer.
		{"lambda, principalId", httpEvent(`{"lambda":{"principalId":"p-9","tenant":"t","n":3}}`), "authorizer:p-9"},
		{"lambda, sub", httpEvent(`{"lambda":{"sub":"s-1"}}`), "authorizer:s-1"},
		{"lambda, principalId before sub", httpEvent(`{"lambda":{"sub":"s-1","principalId":"p-9"}}`), "authorizer:p-9"},
		{"lambda, anonymous is not the anonymous caller", httpEvent(`{"lambda":{"principalId":"anonymous"}}`), "authorizer:anonymous"},
		{"lambda, empty context", httpEvent(`{"lambda":{}}`), unidentified},
		{"lambda, null context", httpEvent(`{"lambda":null}`), unidentified},
		{"lambda, no principalId or sub", httpEvent(`{"lambda":{"tenant":"t"}}`), unidentified},
		{"lambda, empty principalId", httpEvent(`{"lambda":{"principalId":""}}`), unidentified},
		{"lambda, numeric principalId", httpEvent(`{"lambda":{"principalId":42}}`), unidentified},
		{"lambda, principalId in another case only", httpEvent(`{"lambda":{"PrincipalId":"p-9"}}`), unidentified},

		// Contexts no gateway builds.
		{"two sources", httpEvent(`{"jwt":{"claims":{"iss":"` + iss + `","sub":"u"}},"lambda":{"principalId":"p"}}`), unidentified},
		{"unknown source", httpEvent(`{"custom":{"id":"x"}}`), unidentified},
		{"authorizer not an object", httpEvent(`"x"`), unidentified},
		{"authorizer twice", `{"version":"2.0","requestContext":{"http":{"method":"POST"},"authorizer":{},"authorizer":{"lambda":{"principalId":"p"}}}}`, unidentified},
		{"authorizer in another case", `{"version":"2.0","requestContext":{"http":{"method":"POST"},"Authorizer":{"lambda":{"principalId":"p"}}}}`, unidentified},
		{"identity in another case", `{"httpMethod":"POST","requestContext":{"Identity":{"userArn":"arn:aws:iam::1:role/r"}}}`, unidentified},
		{"identity and a variant", restEvent("", restNoIAM)[:len(restEvent("", restNoIAM))-2] + `,"IDENTITY":{}}}`, unidentified},

		// REST Cognito user pool authorizer.
		{"rest, cognito", restEvent(`{"claims":{"iss":"https://cognito-idp.us-east-1.amazonaws.com/us-east-1_x","sub":"c-1","cognito:username":"c"}}`, restNoIAM),
			"jwt:https://cognito-idp.us-east-1.amazonaws.com/us-east-1_x#c-1"},
		{"rest, cognito without sub", restEvent(`{"claims":{"iss":"`+iss+`"}}`, restNoIAM), unidentified},
		{"rest, cognito without iss", restEvent(`{"claims":{"sub":"c-1"}}`, restNoIAM), unidentified},
		{"rest, cognito claims unusable, principalId not read", restEvent(`{"claims":{"sub":"c-1"},"principalId":"p"}`, ""), unidentified},

		// REST Lambda authorizer.
		{"rest, lambda authorizer", restEvent(`{"principalId":"p-2","integrationLatency":12,"tenant":"t","ok":true}`, restNoIAM), "authorizer:p-2"},
		{"rest, non-string member elsewhere", restEvent(`{"integrationLatency":0,"principalId":"p-2","claims":"not claims"}`, ""), "authorizer:p-2"},
		{"rest, both spellings take principalId", restEvent(`{"principalId":"p-2","PrincipalId":"p-evil"}`, ""), "authorizer:p-2"},
		{"rest, both spellings, other order", restEvent(`{"PrincipalId":"p-evil","principalId":"p-2"}`, ""), "authorizer:p-2"},
		{"rest, other spelling only", restEvent(`{"PrincipalId":"p-evil","integrationLatency":0}`, ""), unidentified},
		{"rest, no principalId", restEvent(`{"integrationLatency":0}`, restNoIAM), unidentified},
		{"rest, empty principalId", restEvent(`{"principalId":""}`, ""), unidentified},
		{"rest, numeric principalId", restEvent(`{"principalId":7}`, ""), unidentified},
		{"rest, principalId twice", restEvent(`{"principalId":"a","principalId":"b"}`, ""), unidentified},

		// REST IAM.
		{"rest, iam", restEvent("", `{"accessKey":"AKIA","accountId":"1","caller":"AID","user":"AID","userArn":"arn:aws:iam::1:role/r","sourceIp":"203.0.113.1"}`), "iam:arn:aws:iam::1:role/r"},
		{"rest, iam with an empty authorizer", restEvent(`{}`, `{"userArn":"arn:aws:iam::1:role/r"}`), "iam:arn:aws:iam::1:role/r"},
		{"rest, iam without userArn", restEvent("", `{"accessKey":"AKIA","caller":"AID","user":"AID","userArn":null}`), unidentified},
		{"rest, iam, empty userArn", restEvent("", `{"accessKey":"AKIA","userArn":""}`), unidentified},
		{"rest, iam, numeric userArn", restEvent("", `{"userArn":5,"sourceIp":"203.0.113.1"}`), unidentified},
		{"rest, identity not an object", restEvent("", `"x"`), unidentified},
		{"rest, the authorizer wins over the identity", restEvent(`{"principalId":"p"}`, `{"userArn":"arn:aws:iam::1:role/r"}`), "authorizer:p"},
		{"http api ignores an identity section", `{"version":"2.0","requestContext":{"http":{"method":"POST"},"identity":{"userArn":"arn:aws:iam::1:role/r"}}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Decode([]byte(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == unidentified {
				if !r.Unidentified || r.Principal != "" {
					t.Errorf("principal %q, unidentified %v; want unidentified", r.Principal, r.Unidentified)
				}
				return
			}
			if r.Unidentified || r.Principal != tt.want {
				t.Errorf("principal %q, unidentified %v; want %q", r.Principal, r.Unidentified, tt.want)
			}
			if r.Principal == stateless.Anonymous {
				t.Error("a caller is the anonymous principal")
			}
		})
	}
}

// TestInvokePrincipals runs events through the handler: an identified
// caller reaches the tool under its namespaced principal, the anonymous
// caller as "anonymous", and every leak shape is answered 401 with a
// JSON-RPC error, the tool never running.
func TestInvokePrincipals(t *testing.T) {
	s := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	ran := 0
	stateless.AddTool(s, &stateless.Tool{Name: "whoami"}, func(ctx context.Context, r *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, struct {
		Principal string `json:"principal"`
	}, error) {
		ran++
		return nil, struct {
			Principal string `json:"principal"`
		}{r.Principal}, nil
	})
	h := &Handler{Server: s}
	body, _ := json.Marshal(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	event := func(authorizer string) []byte {
		ev := `{"version":"2.0","headers":{"content-type":"application/json","mcp-protocol-version":"2026-07-28","mcp-method":"tools/call","mcp-name":"whoami"},"requestContext":{"http":{"method":"POST","path":"/mcp"}`
		if authorizer != "" {
			ev += `,"authorizer":` + authorizer
		}
		return []byte(ev + `},"body":` + string(body) + `}`)
	}
	type answer struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
		Body       string            `json:"body"`
	}
	invoke := func(authorizer string) (answer, map[string]json.RawMessage) {
		t.Helper()
		out, err := h.Invoke(context.Background(), event(authorizer))
		if err != nil {
			t.Fatal(err)
		}
		var a answer
		var msg map[string]json.RawMessage
		if json.Unmarshal(out, &a) != nil || json.Unmarshal([]byte(a.Body), &msg) != nil {
			t.Fatalf("answer %s", out)
		}
		return a, msg
	}
	for authorizer, want := range map[string]string{
		"": stateless.Anonymous,
		`{"jwt":{"claims":{"iss":"` + iss + `","sub":"anonymous"}}}`: "jwt:" + iss + "#anonymous",
		`{"lambda":{"principalId":"p-9"}}`:                           "authorizer:p-9",
	} {
		a, msg := invoke(authorizer)
		if a.StatusCode != 200 || !strings.Contains(string(msg["result"]), `"principal":"`+want+`"`) {
			t.Errorf("authorizer %s: %d %s, want principal %q", authorizer, a.StatusCode, a.Body, want)
		}
	}
	ran = 0
	for _, authorizer := range []string{
		`{"jwt":{"claims":{"iss":"` + iss + `"}}}`,
		`{"jwt":{"claims":{"iss":"` + iss + `","sub":""}}}`,
		`{"lambda":{}}`,
		`{"lambda":{"tenant":"t"}}`,
		`{"iam":{"accountId":"1"}}`,
	} {
		a, msg := invoke(authorizer)
		var e struct {
			Code int `json:"code"`
		}
		if a.StatusCode != 401 || a.Headers["Content-Type"] != "application/json" || json.Unmarshal(msg["error"], &e) != nil || e.Code != -32600 {
			t.Errorf("authorizer %s: %d %v %s, want 401 with a JSON-RPC error", authorizer, a.StatusCode, a.Headers, a.Body)
		}
	}
	// A REST Lambda authorizer's context with a number in it.
	out, err := h.Invoke(context.Background(), []byte(`{"httpMethod":"POST","headers":{"content-type":"application/json"},"requestContext":{"authorizer":{"integrationLatency":3,"tenant":"t"}},"body":"{}"}`))
	if err != nil || !strings.Contains(string(out), `"statusCode":401`) {
		t.Errorf("rest without principalId: %s %v", out, err)
	}
	if ran != 0 {
		t.Errorf("the tool ran %d times for unidentified callers", ran)
	}
}
