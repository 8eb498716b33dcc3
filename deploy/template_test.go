// Package deploy checks the SAM template, template.yaml, without the SAM
// CLI or an AWS account: goformation parses it into typed resources
// (catching unknown properties and wrong value types), and the facts that
// goformation cannot see — it resolves !Ref and !GetAtt to empty strings
// and does not know SAM's build metadata — are read from the YAML itself.
package deploy

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"gopkg.in/yaml.v3"
)

const templatePath = "../template.yaml"

func parse(t *testing.T) *cloudformation.Template {
	t.Helper()
	tmpl, err := goformation.Open(templatePath)
	if err != nil {
		t.Fatalf("goformation: %v", err)
	}
	return tmpl
}

// raw is the template as a YAML node tree, intrinsic tags kept.
func raw(t *testing.T) *yaml.Node {
	t.Helper()
	b, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0]
}

// at walks mapping keys and sequence indexes ("0") down from n.
func at(t *testing.T, n *yaml.Node, path ...string) *yaml.Node {
	t.Helper()
	for _, p := range path {
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					next = n.Content[i+1]
				}
			}
			if next == nil {
				t.Fatalf("no %q at %v", p, path)
			}
			n = next
		case yaml.SequenceNode:
			i := int(p[0] - '0')
			if len(p) != 1 || i >= len(n.Content) {
				t.Fatalf("no index %q at %v", p, path)
			}
			n = n.Content[i]
		default:
			t.Fatalf("cannot descend into %v at %q", n.Kind, p)
		}
	}
	return n
}

func scalars(n *yaml.Node) []string {
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	var out []string
	for _, c := range n.Content {
		out = append(out, c.Value)
	}
	return out
}

func TestFunction(t *testing.T) {
	tmpl := parse(t)
	fn, err := tmpl.GetServerlessFunctionWithName("McpFunction")
	if err != nil {
		t.Fatal(err)
	}
	if got := deref(fn.Runtime); got != "provided.al2023" {
		t.Errorf("Runtime = %q", got)
	}
	if !slices.Equal(fn.Architectures, []string{"arm64"}) {
		t.Errorf("Architectures = %v", fn.Architectures)
	}
	if got := deref(fn.Handler); got != "bootstrap" {
		t.Errorf("Handler = %q", got)
	}
	if got := fn.AWSCloudFormationMetadata["BuildMethod"]; got != "makefile" {
		t.Errorf("Metadata.BuildMethod = %v", got)
	}
	if fn.Timeout == nil || *fn.Timeout > 29 || *fn.Timeout < 10 {
		t.Errorf("Timeout = %v: want 10-29 s, under API Gateway's integration limit", fn.Timeout)
	}
	if fn.MemorySize == nil || *fn.MemorySize < 128 {
		t.Errorf("MemorySize = %v", fn.MemorySize)
	}

	// Routes: POST and ANY on /mcp, on the HTTP API.
	routes := map[string]string{}
	for name, ev := range fn.Events {
		if ev.Type != "HttpApi" {
			t.Errorf("event %s has type %q, want HttpApi", name, ev.Type)
		}
	}
	r := raw(t)
	events := at(t, r, "Resources", "McpFunction", "Properties", "Events")
	for i := 0; i+1 < len(events.Content); i += 2 {
		props := at(t, events.Content[i+1], "Properties")
		routes[at(t, props, "Method").Value] = at(t, props, "Path").Value
		if api := at(t, props, "ApiId"); api.Tag != "!Ref" || api.Value != "McpApi" {
			t.Errorf("event %s: ApiId %s %s", events.Content[i].Value, api.Tag, api.Value)
		}
	}
	if routes["POST"] != "/mcp" || routes["ANY"] != "/mcp" || len(routes) != 2 {
		t.Errorf("routes = %v, want POST and ANY on /mcp", routes)
	}

	// Environment: the table and the key reach the function.
	env := at(t, r, "Resources", "McpFunction", "Properties", "Environment", "Variables")
	for name, want := range map[string][2]string{
		"MCP_CLAIMS_TABLE":    {"!Ref", "ClaimsTable"},
		"MCP_STATE_KMS_KEY":   {"!GetAtt", "StateKey.Arn"},
		"LOG_LEVEL":           {"!Ref", "LogLevel"},
		"MCP_ALLOWED_ORIGINS": {"!Ref", "AllowedOrigins"},
	} {
		v := at(t, env, name)
		if v.Tag != want[0] || v.Value != want[1] {
			t.Errorf("%s = %s %s, want %s %s", name, v.Tag, v.Value, want[0], want[1])
		}
	}
}

// TestPolicies checks least privilege: every statement names exactly the
// actions the code uses on exactly one resource of this stack.
func TestPolicies(t *testing.T) {
	r := raw(t)
	stmts := at(t, r, "Resources", "McpFunction", "Properties", "Policies", "0", "Statement")
	want := map[string]struct {
		actions  []string
		resource string
	}{
		"Claims":   {[]string{"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, "ClaimsTable.Arn"},
		"StateKey": {[]string{"kms:Decrypt", "kms:GenerateDataKey"}, "StateKey.Arn"},
	}
	seen := 0
	for _, st := range stmts.Content {
		sid := at(t, st, "Sid").Value
		w, ok := want[sid]
		if !ok {
			t.Errorf("unexpected statement %q", sid)
			continue
		}
		seen++
		if at(t, st, "Effect").Value != "Allow" {
			t.Errorf("%s: not Allow", sid)
		}
		actions := scalars(at(t, st, "Action"))
		slices.Sort(actions)
		if !slices.Equal(actions, w.actions) {
			t.Errorf("%s: actions %v, want %v", sid, actions, w.actions)
		}
		for _, a := range actions {
			if strings.Contains(a, "*") {
				t.Errorf("%s: wildcard action %s", sid, a)
			}
		}
		res := at(t, st, "Resource")
		if res.Tag != "!GetAtt" || res.Value != w.resource {
			t.Errorf("%s: resource %s %s, want !GetAtt %s", sid, res.Tag, res.Value, w.resource)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of %d statements present", seen, len(want))
	}
	// The key may only be used to seal request state.
	cond := at(t, stmts, "1", "Condition", "StringEquals", "kms:EncryptionContext:purpose")
	if cond.Value != "mcp-request-state" {
		t.Errorf("StateKey condition = %q", cond.Value)
	}
}

func TestTableAndKey(t *testing.T) {
	tmpl := parse(t)
	table, err := tmpl.GetDynamoDBTableWithName("ClaimsTable")
	if err != nil {
		t.Fatal(err)
	}
	if deref(table.BillingMode) != "PAY_PER_REQUEST" {
		t.Errorf("BillingMode = %v", deref(table.BillingMode))
	}
	if ttl := table.TimeToLiveSpecification; ttl == nil || !ttl.Enabled || deref(ttl.AttributeName) != "expires_at" {
		t.Errorf("TTL = %+v, want enabled on expires_at", ttl)
	}
	if sse := table.SSESpecification; sse == nil || !sse.SSEEnabled {
		t.Errorf("SSE = %+v", sse)
	}
	if p := table.PointInTimeRecoverySpecification; p == nil || p.PointInTimeRecoveryEnabled == nil || !*p.PointInTimeRecoveryEnabled {
		t.Errorf("PITR = %+v", p)
	}
	if len(table.KeySchema) != 1 || table.KeySchema[0].AttributeName != "pk" || table.KeySchema[0].KeyType != "HASH" {
		t.Errorf("KeySchema = %+v", table.KeySchema)
	}

	key, err := tmpl.GetKMSKeyWithName("StateKey")
	if err != nil {
		t.Fatal(err)
	}
	if deref(key.KeySpec) != "SYMMETRIC_DEFAULT" || deref(key.KeyUsage) != "ENCRYPT_DECRYPT" {
		t.Errorf("key spec %v usage %v", deref(key.KeySpec), deref(key.KeyUsage))
	}
	if key.EnableKeyRotation == nil || !*key.EnableKeyRotation {
		t.Error("key rotation is off")
	}
	if _, err := tmpl.GetKMSAliasWithName("StateKeyAlias"); err != nil {
		t.Error(err)
	}
}

func TestParametersAndOutputs(t *testing.T) {
	tmpl := parse(t)
	for _, p := range []string{"AllowedOrigins", "LogLevel", "JwtIssuer", "JwtAudience"} {
		if _, ok := tmpl.Parameters[p]; !ok {
			t.Errorf("parameter %s missing", p)
		}
	}
	for _, o := range []string{"EndpointUrl", "ClaimsTableName", "StateKeyArn"} {
		if _, ok := tmpl.Outputs[o]; !ok {
			t.Errorf("output %s missing", o)
		}
	}
	if _, err := tmpl.GetServerlessHttpApiWithName("McpApi"); err != nil {
		t.Error(err)
	}
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// TestConformanceFunction: the optional fixture deploys only on request,
// on its own route, and may use only the state key.
func TestConformanceFunction(t *testing.T) {
	r := raw(t)
	fn := at(t, r, "Resources", "ConformanceFunction")
	if at(t, fn, "Condition").Value != "DeployConformance" {
		t.Error("the conformance function is not conditional")
	}
	if at(t, fn, "Metadata", "BuildMethod").Value != "makefile" {
		t.Error("build method")
	}
	if p := at(t, fn, "Properties", "Events", "Post", "Properties", "Path").Value; p != "/conformance" {
		t.Errorf("path %q", p)
	}
	stmts := at(t, fn, "Properties", "Policies", "0", "Statement")
	if len(stmts.Content) != 1 || at(t, stmts, "0", "Resource").Value != "StateKey.Arn" {
		t.Errorf("conformance policy: %d statements", len(stmts.Content))
	}
	if got := scalars(at(t, stmts, "0", "Action")); strings.Join(got, ",") != "kms:GenerateDataKey,kms:Decrypt" {
		t.Errorf("actions %v", got)
	}
	if _, ok := parse(t).Parameters["ConformanceFixture"]; !ok {
		t.Error("no ConformanceFixture parameter")
	}
}
