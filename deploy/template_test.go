// Package deploy checks the SAM template, template.yaml, without the SAM
// CLI or an AWS account. goformation parses it into typed resources
// (catching unknown properties and wrong value types); the facts it cannot
// see — it resolves !Ref and !GetAtt to empty strings, does not apply
// Globals and does not know SAM's build metadata — are read from the YAML
// itself. deploy/lint_template.py (make template) complements these tests
// with the SAM translator and cfn-lint over every parameter combination.
package deploy

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"gopkg.in/yaml.v3"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

const templatePath = "../template.yaml"

// parse is the template as goformation's typed resources. goformation
// (v7.14.9, its last release) predates LoggingConfig on
// AWS::Serverless::Function, so that property is dropped from the
// functions and Globals first; TestGlobals and TestLogGroups check it.
func parse(t *testing.T) *cloudformation.Template {
	t.Helper()
	root := raw(t)
	// Properties newer than goformation's schema (v7.14.9 is its latest):
	// a function's LoggingConfig, a REST integration's
	// ResponseTransferMode. cfn-lint checks them (make template).
	drop := func(m *yaml.Node, key string) {
		if m == nil || m.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				m.Content = slices.Delete(m.Content, i, i+2)
				return
			}
		}
	}
	drop(find(root, "Globals", "Function"), "LoggingConfig")
	for _, name := range resourcesOfType(t, root, "AWS::Serverless::Function") {
		drop(find(root, "Resources", name, "Properties"), "LoggingConfig")
	}
	for _, name := range resourcesOfType(t, root, "AWS::ApiGateway::Method") {
		integ := find(root, "Resources", name, "Properties", "Integration")
		drop(integ, "ResponseTransferMode")
		if integ != nil && integ.Tag == "!If" { // each branch an integration
			for _, b := range integ.Content[1:] {
				drop(b, "ResponseTransferMode")
			}
		}
	}
	b, err := yaml.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := goformation.ParseYAML(b)
	if err != nil {
		t.Fatalf("goformation: %v", err)
	}
	return tmpl
}

// raw is the template as a YAML node tree (its root mapping), intrinsic
// tags kept.
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

// find walks mapping keys and sequence indexes down from n; nil where the
// path ends.
func find(n *yaml.Node, path ...string) *yaml.Node {
	for _, p := range path {
		if n == nil {
			return nil
		}
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					next = n.Content[i+1]
				}
			}
			n = next
		case yaml.SequenceNode:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i < 0 || i >= len(n.Content) {
				return nil
			}
			n = n.Content[i]
		default:
			return nil
		}
	}
	return n
}

// at is find that fails the test where the path ends.
func at(t *testing.T, n *yaml.Node, path ...string) *yaml.Node {
	t.Helper()
	got := find(n, path...)
	if got == nil {
		t.Fatalf("no %v", path)
	}
	return got
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

// show renders a node compactly for messages and comparisons:
// "!Ref X", "!If [C, JWT, NONE]", "{a: b}".
func show(n *yaml.Node) string {
	if n == nil {
		return "<none>"
	}
	tag := ""
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		tag = n.Tag + " "
	}
	switch n.Kind {
	case yaml.SequenceNode:
		var parts []string
		for _, c := range n.Content {
			parts = append(parts, show(c))
		}
		return tag + "[" + strings.Join(parts, ", ") + "]"
	case yaml.MappingNode:
		var parts []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			parts = append(parts, n.Content[i].Value+": "+show(n.Content[i+1]))
		}
		return tag + "{" + strings.Join(parts, ", ") + "}"
	case yaml.AliasNode:
		return show(n.Alias)
	}
	return tag + n.Value
}

func want(t *testing.T, n *yaml.Node, expect string, what string) {
	t.Helper()
	if got := show(n); got != expect {
		t.Errorf("%s = %s, want %s", what, got, expect)
	}
}

func resourcesOfType(t *testing.T, root *yaml.Node, typ string) []string {
	t.Helper()
	res := at(t, root, "Resources")
	var out []string
	for i := 0; i+1 < len(res.Content); i += 2 {
		if ty := find(res.Content[i+1], "Type"); ty != nil && ty.Value == typ {
			out = append(out, res.Content[i].Value)
		}
	}
	return out
}

// env is a function's environment as SAM deploys it: Globals' variables,
// then the function's own.
func env(t *testing.T, root *yaml.Node, fn string) map[string]*yaml.Node {
	t.Helper()
	out := map[string]*yaml.Node{}
	for _, vars := range []*yaml.Node{
		find(root, "Globals", "Function", "Environment", "Variables"),
		find(root, "Resources", fn, "Properties", "Environment", "Variables"),
	} {
		if vars == nil {
			continue
		}
		for i := 0; i+1 < len(vars.Content); i += 2 {
			out[vars.Content[i].Value] = vars.Content[i+1]
		}
	}
	return out
}

func TestGlobals(t *testing.T) {
	r := raw(t)
	g := at(t, r, "Globals", "Function")
	want(t, at(t, g, "Runtime"), "provided.al2023", "Runtime")
	want(t, at(t, g, "Architectures"), "[arm64]", "Architectures")
	want(t, at(t, g, "Handler"), "bootstrap", "Handler")
	want(t, at(t, g, "Tracing"), "Active", "Tracing")
	want(t, at(t, g, "LoggingConfig", "LogFormat"), "JSON", "LogFormat")
	// The function filters by LOG_LEVEL itself: Lambda must drop nothing,
	// its metric lines least of all.
	want(t, at(t, g, "LoggingConfig", "ApplicationLogLevel"), "TRACE", "ApplicationLogLevel")
	want(t, at(t, g, "LoggingConfig", "SystemLogLevel"), "INFO", "SystemLogLevel")

	// The function's timeout is a task worker's (Lambda's 15 minutes at
	// most); gateway requests are bounded by MCP_REQUEST_TIMEOUT.
	var timeout, memory int
	if _, err := fmt.Sscan(at(t, g, "Timeout").Value, &timeout); err != nil || timeout < 60 || timeout > 900 {
		t.Errorf("Timeout = %s: want 60-900 s, a task worker's", at(t, g, "Timeout").Value)
	}
	if _, err := fmt.Sscan(at(t, g, "MemorySize").Value, &memory); err != nil || memory < 128 {
		t.Errorf("MemorySize = %s", at(t, g, "MemorySize").Value)
	}

	vars := at(t, g, "Environment", "Variables")
	for name, expect := range map[string]string{
		// Empty in the cloud; declared so that sam local --env-vars may set
		// them (SAM overrides only what the template declares).
		"AWS_ENDPOINT_URL_DYNAMODB": "",
		"AWS_ENDPOINT_URL_KMS":      "",
		"AWS_ENDPOINT_URL_LAMBDA":   "",
		"MCP_REQUEST_TIMEOUT":       "28s",
		"MCP_METRICS_NAMESPACE":     "!Ref AWS::StackName",
		"LOG_LEVEL":                 "!Ref LogLevel",
		"MCP_STATE_KMS_KEY":         "!GetAtt StateKey.Arn",
	} {
		want(t, at(t, vars, name), expect, "Globals "+name)
	}

	// Every function takes these from Globals, none overrides them.
	for _, fn := range resourcesOfType(t, r, "AWS::Serverless::Function") {
		for _, p := range []string{"Runtime", "Architectures", "Handler", "Tracing", "Timeout", "MemorySize"} {
			if v := find(r, "Resources", fn, "Properties", p); v != nil {
				t.Errorf("%s overrides Globals %s with %s", fn, p, show(v))
			}
		}
		for _, p := range []string{"LogFormat", "ApplicationLogLevel", "SystemLogLevel"} {
			if v := find(r, "Resources", fn, "Properties", "LoggingConfig", p); v != nil {
				t.Errorf("%s overrides Globals LoggingConfig.%s", fn, p)
			}
		}
	}
}

// TestTaskWorkers: the function may invoke itself (a task's worker), by a
// policy on its role that names its ARN — in its own Policies that would
// be a circular dependency — and Lambda's asynchronous retries end in an
// alarmed queue.
func TestTaskWorkers(t *testing.T) {
	r := raw(t)
	res := at(t, r, "Resources")
	for fn, policy := range map[string]string{"McpFunction": "McpWorkerInvokePolicy", "ConformanceFunction": "ConformanceWorkerInvokePolicy"} {
		p := at(t, res, policy)
		want(t, at(t, p, "Type"), "AWS::IAM::RolePolicy", policy+" Type")
		want(t, at(t, p, "Properties", "RoleName"), "!Ref "+fn+"Role", policy+" RoleName")
		st := at(t, p, "Properties", "PolicyDocument", "Statement")
		if len(st.Content) != 1 {
			t.Fatalf("%s has %d statements", policy, len(st.Content))
		}
		want(t, at(t, st.Content[0], "Action"), "lambda:InvokeFunction", policy+" Action")
		want(t, at(t, st.Content[0], "Resource"), "!GetAtt "+fn+".Arn", policy+" Resource")
		cfg := at(t, res, fn, "Properties", "EventInvokeConfig")
		want(t, at(t, cfg, "MaximumRetryAttempts"), "2", fn+" MaximumRetryAttempts")
	}
	want(t, at(t, res, "McpFunction", "Properties", "EventInvokeConfig", "DestinationConfig", "OnFailure", "Destination"), "!GetAtt TaskFailuresQueue.Arn", "OnFailure")
	want(t, at(t, res, "TaskFailuresAlarm", "Properties", "Dimensions").Content[0].Content[3], "!GetAtt TaskFailuresQueue.QueueName", "alarm's queue")
	want(t, at(t, res, "ConformanceFunction", "Properties", "Environment", "Variables", "MCP_TASKS_TABLE"), "!Ref ClaimsTable", "fixture's tasks table")
}

func TestFunction(t *testing.T) {
	r := raw(t)
	fn := at(t, r, "Resources", "McpFunction")
	want(t, at(t, fn, "Type"), "AWS::Serverless::Function", "McpFunction Type")
	want(t, at(t, fn, "Metadata", "BuildMethod"), "makefile", "Metadata.BuildMethod")
	want(t, at(t, fn, "Properties", "CodeUri"), ".", "CodeUri")
	if ev := find(fn, "Properties", "Events"); ev != nil {
		t.Errorf("McpFunction has Events %s: the API's routes are plain resources", show(ev))
	}
	want(t, at(t, fn, "Properties", "ReservedConcurrentExecutions"),
		"!If [HasReservation, !Ref ReservedConcurrency, !Ref AWS::NoValue]", "ReservedConcurrentExecutions")

	vars := env(t, r, "McpFunction")
	for name, expect := range map[string]string{
		"MCP_CLAIMS_TABLE":          "!Ref ClaimsTable",
		"MCP_STATE_KMS_KEY":         "!GetAtt StateKey.Arn",
		"LOG_LEVEL":                 "!Ref LogLevel",
		"MCP_ALLOWED_ORIGINS":       "!Ref AllowedOrigins",
		"MCP_AUDIENCE":              "!Ref EndpointUrl",
		"MCP_METRICS_NAMESPACE":     "!Ref AWS::StackName",
		"AWS_ENDPOINT_URL_DYNAMODB": "",
		"AWS_ENDPOINT_URL_KMS":      "",
		// The function validates bearer tokens itself.
		"MCP_AUTH_ISSUER":     "!Ref AuthIssuer",
		"MCP_AUTH_AUDIENCE":   "!If [HasAuthAudience, !Ref AuthAudience, !Ref EndpointUrl]",
		"MCP_AUTH_JWKS_URL":   "!Ref AuthJwksUrl",
		"MCP_AUTH_CLIENT_IDS": "!Ref AuthClientIds",
		// It refuses to start with scopes but no issuer.
		"MCP_AUTH_SCOPES_SUPPORTED":           "!If [HasAuthIssuer, !Ref AuthScopesSupported, ]",
		"MCP_AUTH_SCOPE_PREFIX":               "!Ref AuthScopePrefix",
		"MCP_AUTH_ACCEPTED_AUDIENCES":         "!Ref AuthAcceptedAudiences",
		"MCP_AUTH_REGISTRATION_CLIENT_ID":     "!Ref AuthRegistrationClientId",
		"MCP_AUTH_AUTHORIZATION_ENDPOINT":     "!Ref AuthAuthorizationEndpoint",
		"MCP_AUTH_TOKEN_ENDPOINT":             "!Ref AuthTokenEndpoint",
		"MCP_AUTH_REGISTRATION_REDIRECT_URIS": "!Ref AuthRegistrationRedirectUris",
		"MCP_ALLOW_ANONYMOUS":                 "!Ref AllowAnonymous",
	} {
		want(t, vars[name], expect, "McpFunction "+name)
	}
	for name := range env(t, r, "ConformanceFunction") {
		if strings.HasPrefix(name, "MCP_AUTH_") || name == "MCP_ALLOW_ANONYMOUS" {
			t.Errorf("ConformanceFunction gets %s: the fixture does not read it", name)
		}
	}

	// goformation's typed view of the function parses.
	if _, err := parse(t).GetServerlessFunctionWithName("McpFunction"); err != nil {
		t.Error(err)
	}
}

// TestRoutes: POST and ANY on /mcp reach the function through one Lambda
// proxy integration, each behind the JWT authorizer when it exists; the
// protected-resource metadata is reached without authorization, always.
func TestRoutes(t *testing.T) {
	r := raw(t)
	res := at(t, r, "Resources")
	want(t, at(t, res, "McpApi", "Type"), "AWS::ApiGatewayV2::Api", "McpApi Type")
	want(t, at(t, res, "McpApi", "Properties", "ProtocolType"), "HTTP", "ProtocolType")

	integ := at(t, res, "McpIntegration", "Properties")
	want(t, at(t, integ, "ApiId"), "!Ref McpApi", "integration ApiId")
	want(t, at(t, integ, "IntegrationType"), "AWS_PROXY", "IntegrationType")
	want(t, at(t, integ, "PayloadFormatVersion"), "2.0", "PayloadFormatVersion")
	want(t, at(t, integ, "IntegrationUri"), "!GetAtt McpFunction.Arn", "IntegrationUri")
	var timeoutMs int
	fmt.Sscan(at(t, integ, "TimeoutInMillis").Value, &timeoutMs)
	reqTimeout, err := time.ParseDuration(at(t, r, "Globals", "Function", "Environment", "Variables", "MCP_REQUEST_TIMEOUT").Value)
	if err != nil || timeoutMs > 30000 || time.Duration(timeoutMs)*time.Millisecond <= reqTimeout {
		t.Errorf("TimeoutInMillis = %d: want above MCP_REQUEST_TIMEOUT (%v, %v) and at most 30000", timeoutMs, reqTimeout, err)
	}
	if door := rie.HTTPAPI.Timeout(); time.Duration(timeoutMs)*time.Millisecond != door {
		t.Errorf("TimeoutInMillis = %d: the tests' HTTP API front waits %v", timeoutMs, door)
	}
	// The challenges API Gateway sets from the function's relay header:
	// exactly what the tests' HTTP API front applies.
	got := rie.ResponseParameters{}
	params := at(t, integ, "ResponseParameters")
	for i := 0; i+1 < len(params.Content); i += 2 {
		var status int
		fmt.Sscan(params.Content[i].Value, &status)
		got[status] = map[string]string{}
		// CloudFormation's form: a list of Destination and Source.
		for _, p := range at(t, params.Content[i+1], "ResponseParameters").Content {
			got[status][at(t, p, "Destination").Value] = at(t, p, "Source").Value
		}
	}
	if wantParams := rie.TemplateResponseParameters(); fmt.Sprint(got) != fmt.Sprint(wantParams) {
		t.Errorf("McpIntegration ResponseParameters %v, want the front's %v", got, wantParams)
	}

	routes := map[string]*yaml.Node{}
	for _, name := range resourcesOfType(t, r, "AWS::ApiGatewayV2::Route") {
		p := at(t, res, name, "Properties")
		want(t, at(t, p, "ApiId"), "!Ref McpApi", name+" ApiId")
		routes[at(t, p, "RouteKey").Value] = at(t, res, name)
	}
	for _, key := range []string{"POST /mcp", "ANY /mcp"} {
		route := routes[key]
		if route == nil {
			t.Errorf("no route %s", key)
			continue
		}
		if c := find(route, "Condition"); c != nil {
			t.Errorf("route %s is conditional (%s)", key, c.Value)
		}
		want(t, at(t, route, "Properties", "Target"), "!Sub integrations/${McpIntegration}", key+" Target")
		want(t, at(t, route, "Properties", "AuthorizationType"), "!If [UseJwt, JWT, NONE]", key+" AuthorizationType")
		want(t, at(t, route, "Properties", "AuthorizerId"), "!If [UseJwt, !Ref McpJwtAuthorizer, !Ref AWS::NoValue]", key+" AuthorizerId")
	}
	// A browser's preflight carries no token: with CORS and the
	// authorizer, OPTIONS gets a route of its own without authorization.
	if pre := routes["OPTIONS /mcp"]; pre == nil {
		t.Error("no OPTIONS /mcp route for preflights under the authorizer")
	} else {
		want(t, at(t, pre, "Condition"), "CorsWithJwt", "OPTIONS /mcp Condition")
		want(t, at(t, pre, "Properties", "AuthorizationType"), "NONE", "OPTIONS /mcp AuthorizationType")
	}
	want(t, at(t, r, "Conditions", "CorsWithJwt"), "!And [!Condition UseJwt, !Condition HasOrigins]", "CorsWithJwt")

	// The metadata tells a client without a token where to get one: the
	// gateway's authorizer must never stand in front of it.
	for _, key := range []string{"GET " + auth.MetadataPath, "GET " + auth.MetadataPath + "/mcp"} {
		route := routes[key]
		if route == nil {
			t.Errorf("no route %s", key)
			continue
		}
		if c := find(route, "Condition"); c != nil {
			t.Errorf("route %s is conditional (%s)", key, c.Value)
		}
		want(t, at(t, route, "Properties", "Target"), "!Sub integrations/${McpIntegration}", key+" Target")
		want(t, at(t, route, "Properties", "AuthorizationType"), "NONE", key+" AuthorizationType")
		if id := find(route, "Properties", "AuthorizerId"); id != nil {
			t.Errorf("route %s has AuthorizerId %s", key, show(id))
		}
	}
	// The registration facade's metadata and registration endpoint are for
	// clients without a token too, and exist only with the facade.
	for _, key := range []string{"GET " + auth.AuthorizationServerMetadataPath + "/mcp", "POST /mcp" + auth.RegistrationSuffix} {
		route := routes[key]
		if route == nil {
			t.Errorf("no route %s", key)
			continue
		}
		want(t, at(t, route, "Condition"), "HasRegistration", key+" Condition")
		want(t, at(t, route, "Properties", "Target"), "!Sub integrations/${McpIntegration}", key+" Target")
		want(t, at(t, route, "Properties", "AuthorizationType"), "NONE", key+" AuthorizationType")
		if id := find(route, "Properties", "AuthorizerId"); id != nil {
			t.Errorf("route %s has AuthorizerId %s", key, show(id))
		}
	}
	want(t, at(t, r, "Conditions", "HasRegistration"), "!Not [!Equals [!Ref AuthRegistrationClientId, ]]", "HasRegistration")
	// Every route to the MCP integration is one of these.
	for key, route := range routes {
		if show(find(route, "Properties", "Target")) != "!Sub integrations/${McpIntegration}" {
			continue
		}
		if !slices.Contains(append([]string{"POST /mcp", "ANY /mcp", "OPTIONS /mcp", "GET " + auth.MetadataPath, "GET " + auth.MetadataPath + "/mcp",
			"GET " + auth.AuthorizationServerMetadataPath + "/mcp", "POST /mcp" + auth.RegistrationSuffix}, proxyRouteKeys()...), key) {
			t.Errorf("unexpected route %s to the MCP function", key)
		}
	}

	stage := at(t, res, "McpStage", "Properties")
	want(t, at(t, stage, "ApiId"), "!Ref McpApi", "stage ApiId")
	want(t, at(t, stage, "StageName"), "$default", "StageName")
	want(t, at(t, stage, "AutoDeploy"), "true", "AutoDeploy")
	want(t, at(t, stage, "DefaultRouteSettings"),
		"{ThrottlingBurstLimit: !Ref ThrottlingBurstLimit, ThrottlingRateLimit: !Ref ThrottlingRateLimit}", "DefaultRouteSettings")

	auth := at(t, res, "McpJwtAuthorizer")
	want(t, at(t, auth, "Condition"), "UseJwt", "authorizer Condition")
	want(t, at(t, auth, "Properties", "AuthorizerType"), "JWT", "AuthorizerType")
	want(t, at(t, auth, "Properties", "IdentitySource"), "[$request.header.Authorization]", "IdentitySource")
	want(t, at(t, auth, "Properties", "JwtConfiguration"),
		"{Issuer: !Ref JwtIssuer, Audience: !Split [,, !Ref JwtAudience]}", "JwtConfiguration")

	perm := at(t, res, "McpInvokePermission", "Properties")
	want(t, at(t, perm, "Action"), "lambda:InvokeFunction", "permission Action")
	want(t, at(t, perm, "FunctionName"), "!GetAtt McpFunction.Arn", "permission FunctionName")
	want(t, at(t, perm, "Principal"), "apigateway.amazonaws.com", "permission Principal")
	// This API's routes: /mcp and the metadata paths below
	// /.well-known (the last * matches across slashes).
	want(t, at(t, perm, "SourceArn"),
		"!Sub arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${McpApi}/*/*/*", "permission SourceArn")

	tmpl := parse(t)
	if _, err := tmpl.GetApiGatewayV2ApiWithName("McpApi"); err != nil {
		t.Error(err)
	}
	if _, err := tmpl.GetApiGatewayV2IntegrationWithName("McpIntegration"); err != nil {
		t.Error(err)
	}
}

// TestCORS: the API's CORS configuration (present only with allowed
// origins) lists what the function itself allows and exposes.
func TestCORS(t *testing.T) {
	r := raw(t)
	cors := at(t, r, "Resources", "McpApi", "Properties", "CorsConfiguration")
	if cors.Tag != "!If" || len(cors.Content) != 3 || cors.Content[0].Value != "HasOrigins" || show(cors.Content[2]) != "!Ref AWS::NoValue" {
		t.Fatalf("CorsConfiguration = %s, want !If [HasOrigins, {...}, !Ref AWS::NoValue]", show(cors))
	}
	want(t, at(t, r, "Conditions", "HasOrigins"), `!Not [!Equals [!Ref AllowedOrigins, ]]`, "HasOrigins")
	c := cors.Content[1]
	want(t, at(t, c, "AllowOrigins"), "!Split [,, !Ref AllowedOrigins]", "AllowOrigins")
	want(t, at(t, c, "AllowCredentials"), "false", "AllowCredentials")
	want(t, at(t, c, "MaxAge"), fmt.Sprint(stateless.CORSMaxAge), "MaxAge")

	same := func(what string, template, code []string) {
		t.Helper()
		norm := func(list []string) []string {
			out := make([]string, len(list))
			for i, s := range list {
				out[i] = strings.ToLower(s)
			}
			slices.Sort(out)
			return out
		}
		if got, w := norm(template), norm(code); !slices.Equal(got, w) {
			t.Errorf("%s: template %v, function %v", what, got, w)
		}
	}
	same("AllowMethods", scalars(at(t, c, "AllowMethods")), stateless.CORSAllowMethods)
	same("ExposeHeaders", scalars(at(t, c, "ExposeHeaders")), stateless.CORSExposeHeaders)
	// The template adds "*" for the per-tool Mcp-Param-* headers, which
	// API Gateway cannot match by prefix.
	headers := scalars(at(t, c, "AllowHeaders"))
	if !slices.Contains(headers, "*") {
		t.Error(`AllowHeaders lacks "*" for the Mcp-Param-* headers`)
	}
	same("AllowHeaders", slices.DeleteFunc(headers, func(h string) bool { return h == "*" }), stateless.CORSAllowHeaders)
}

// TestPolicies checks least privilege: every statement names exactly the
// actions the code uses on exactly one resource: of this stack, or the
// one a parameter names, the statement then present only when the
// parameter is set (an !If on its Condition, else AWS::NoValue).
func TestPolicies(t *testing.T) {
	r := raw(t)
	stmts := at(t, r, "Resources", "McpFunction", "Properties", "Policies", "0", "Statement")
	expect := map[string]struct {
		actions  []string
		resource string
		cond     string // the Condition the statement is under, if any
	}{
		// The claims, notes, tasks, quotas and the listen streams' event
		// log (BatchWriteItem: its appends).
		"Claims":   {[]string{"dynamodb:BatchWriteItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}, "!GetAtt ClaimsTable.Arn", ""},
		"StateKey": {[]string{"kms:Decrypt", "kms:GenerateDataKey"}, "!GetAtt StateKey.Arn", ""},
		// The authorization proxy's client secret (TestAuthProxyClientSecret).
		"AuthProxyClientSecret": {[]string{"secretsmanager:GetSecretValue"}, "!Ref AuthProxyClientSecretArn", "HasAuthProxyClientSecret"},
	}
	seen := 0
	for _, st := range stmts.Content {
		cond := ""
		if st.Tag == "!If" {
			if len(st.Content) != 3 || show(st.Content[2]) != "!Ref AWS::NoValue" {
				t.Errorf("conditional statement %s: want !If [condition, statement, !Ref AWS::NoValue]", show(st))
				continue
			}
			cond, st = st.Content[0].Value, st.Content[1]
		}
		sid := at(t, st, "Sid").Value
		w, ok := expect[sid]
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
		if cond != w.cond {
			t.Errorf("%s: under Condition %q, want %q", sid, cond, w.cond)
		}
		if res := at(t, st, "Resource"); show(res) != w.resource {
			t.Errorf("%s: resource %s, want %s", sid, show(res), w.resource)
		}
	}
	if seen != len(expect) {
		t.Errorf("%d of %d statements present", seen, len(expect))
	}
	// The key may only be used to seal request state.
	want(t, at(t, stmts, "1", "Condition", "StringEquals", "kms:EncryptionContext:purpose"), "mcp-request-state", "StateKey condition")
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
	// The partition key pk and the sort key sk, both strings: what
	// functions/mcp (claims.NewDynamoDBWith, the note book) and
	// internal/testenv/dynamolocal.CreateTable take.
	if len(table.KeySchema) != 2 || table.KeySchema[0].AttributeName != "pk" || table.KeySchema[0].KeyType != "HASH" ||
		table.KeySchema[1].AttributeName != "sk" || table.KeySchema[1].KeyType != "RANGE" {
		t.Errorf("KeySchema = %+v, want pk HASH, sk RANGE", table.KeySchema)
	}
	attrs := map[string]string{}
	for _, a := range table.AttributeDefinitions {
		attrs[a.AttributeName] = a.AttributeType
	}
	if len(attrs) != 2 || attrs["pk"] != "S" || attrs["sk"] != "S" {
		t.Errorf("AttributeDefinitions = %+v, want pk S, sk S", table.AttributeDefinitions)
	}
	// The table is kept when the stack is deleted and when it is replaced
	// (as a change of key schema replaces it).
	r := raw(t)
	want(t, at(t, r, "Resources", "ClaimsTable", "DeletionPolicy"), "Retain", "ClaimsTable DeletionPolicy")
	want(t, at(t, r, "Resources", "ClaimsTable", "UpdateReplacePolicy"), "Retain", "ClaimsTable UpdateReplacePolicy")

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

// TestLogGroups: each function logs to a log group of the stack's, named
// after the stack (not the function: that would be a cycle), kept
// LogRetentionDays days.
func TestLogGroups(t *testing.T) {
	r := raw(t)
	days := at(t, r, "Parameters", "LogRetentionDays")
	want(t, at(t, days, "Type"), "Number", "LogRetentionDays Type")
	if !slices.Contains(scalars(at(t, days, "AllowedValues")), at(t, days, "Default").Value) {
		t.Errorf("LogRetentionDays default %s is not among its AllowedValues", at(t, days, "Default").Value)
	}
	groups := map[string]string{"McpFunction": "McpLogGroup", "ConformanceFunction": "ConformanceLogGroup", "StreamAuthorizerFunction": "StreamAuthorizerLogGroup"}
	fns := resourcesOfType(t, r, "AWS::Serverless::Function")
	if len(fns) != len(groups) {
		t.Errorf("functions %v, want log groups for %d", fns, len(groups))
	}
	for fn, group := range groups {
		want(t, at(t, r, "Resources", fn, "Properties", "LoggingConfig", "LogGroup"), "!Ref "+group, fn+" LogGroup")
		g := at(t, r, "Resources", group)
		want(t, at(t, g, "Type"), "AWS::Logs::LogGroup", group+" Type")
		want(t, at(t, g, "Properties", "RetentionInDays"), "!Ref LogRetentionDays", group+" RetentionInDays")
		name := at(t, g, "Properties", "LogGroupName")
		if name.Tag != "!Sub" || !strings.Contains(name.Value, "${AWS::StackName}") {
			t.Errorf("%s LogGroupName = %s, want a !Sub of ${AWS::StackName}", group, show(name))
		}
		if c, fc := find(g, "Condition"), find(r, "Resources", fn, "Condition"); show(c) != show(fc) {
			t.Errorf("%s Condition %s, its function's %s", group, show(c), show(fc))
		}
	}
}

// TestAlarms: the function's own fault metric, Lambda's throttles and
// errors, the API's 5xx, the streaming door's 5xx and its authorizer's
// "unavailable" decisions, each notifying AlarmTopicArn when it is set.
// Lambda's Errors are the MCP function's alone: the authorizer's count
// every refused token.
func TestAlarms(t *testing.T) {
	r := raw(t)
	type alarm struct{ namespace, dims string }
	expect := map[string]alarm{
		"Faults":    {"!Ref AWS::StackName", "[{Name: Function, Value: !Ref McpFunction}]"},
		"Throttles": {"AWS/Lambda", "[{Name: FunctionName, Value: !Ref McpFunction}]"},
		"Errors":    {"AWS/Lambda", "[{Name: FunctionName, Value: !Ref McpFunction}]"},
		"5xx":       {"AWS/ApiGateway", "[{Name: ApiId, Value: !Ref McpApi}, {Name: Stage, Value: $default}]"},
		// REST API metrics are by the API's name.
		"5XXError": {"AWS/ApiGateway", "[{Name: ApiName, Value: " + show(at(t, r, "Resources", "StreamApi", "Properties", "Name")) + "}, {Name: Stage, Value: !Ref StreamStage}]"},
		// The authorizer's decisions, as the function reports them.
		"Requests": {"!Ref AWS::StackName", "[{Name: Function, Value: !Ref StreamAuthorizerFunction}, {Name: Method, Value: " + stateless.MethodAuthorize +
			"}, {Name: Outcome, Value: " + stateless.DecisionUnavailable.String() + "}]"},
		// Task workers' invocations Lambda gave up on.
		"ApproximateNumberOfMessagesVisible": {"AWS/SQS", "[{Name: QueueName, Value: !GetAtt TaskFailuresQueue.QueueName}]"},
	}
	seen := map[string]bool{}
	for _, name := range resourcesOfType(t, r, "AWS::CloudWatch::Alarm") {
		p := at(t, r, "Resources", name, "Properties")
		metric := at(t, p, "MetricName").Value
		w, ok := expect[metric]
		if !ok || seen[metric] {
			t.Errorf("%s: unexpected alarm on %s", name, metric)
			continue
		}
		seen[metric] = true
		want(t, at(t, p, "Namespace"), w.namespace, name+" Namespace")
		want(t, at(t, p, "Dimensions"), w.dims, name+" Dimensions")
		want(t, at(t, p, "Statistic"), "Sum", name+" Statistic")
		want(t, at(t, p, "Period"), "60", name+" Period")
		want(t, at(t, p, "ComparisonOperator"), "GreaterThanOrEqualToThreshold", name+" ComparisonOperator")
		want(t, at(t, p, "TreatMissingData"), "notBreaching", name+" TreatMissingData")
		var threshold, periods, points float64
		fmt.Sscan(at(t, p, "Threshold").Value, &threshold)
		fmt.Sscan(at(t, p, "EvaluationPeriods").Value, &periods)
		fmt.Sscan(at(t, p, "DatapointsToAlarm").Value, &points)
		if threshold < 1 || periods < 1 || points < 1 || points > periods {
			t.Errorf("%s: threshold %v, %v of %v periods", name, threshold, points, periods)
		}
		for _, actions := range []string{"AlarmActions", "OKActions"} {
			want(t, at(t, p, actions), "!If [HasAlarmTopic, [!Ref AlarmTopicArn], !Ref AWS::NoValue]", name+" "+actions)
		}
	}
	for metric := range expect {
		if !seen[metric] {
			t.Errorf("no alarm on %s", metric)
		}
	}
}

func TestParametersAndOutputs(t *testing.T) {
	r := raw(t)
	tmpl := parse(t)
	for _, p := range []string{
		"EndpointUrl", "AllowedOrigins", "LogLevel", "LogRetentionDays", "JwtIssuer", "JwtAudience",
		"ReservedConcurrency", "ThrottlingBurstLimit", "ThrottlingRateLimit", "AlarmTopicArn", "ConformanceFixture",
		"AuthIssuer", "AuthAudience", "AuthJwksUrl", "AuthClientIds", "AuthScopesSupported", "AllowAnonymous",
		"StreamingDoor", "StreamingCertificateArn", "AuthStepUpScopes",
	} {
		if _, ok := tmpl.Parameters[p]; !ok {
			t.Errorf("parameter %s missing", p)
		}
	}
	// String parameters constrain their values; the defaults pass.
	params := at(t, r, "Parameters")
	for i := 0; i+1 < len(params.Content); i += 2 {
		name, p := params.Content[i].Value, params.Content[i+1]
		if at(t, p, "Type").Value != "String" || find(p, "AllowedValues") != nil {
			continue
		}
		pat := find(p, "AllowedPattern")
		if pat == nil {
			t.Errorf("%s has neither AllowedValues nor AllowedPattern", name)
			continue
		}
		re, err := regexp.Compile(pat.Value)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !re.MatchString(at(t, p, "Default").Value) {
			t.Errorf("%s: the default does not match its AllowedPattern", name)
		}
	}
	rules := at(t, r, "Rules")
	for _, name := range []string{"JwtIssuerNeedsAudience", "JwtAudienceNeedsIssuer", "ThrottlingRateNeedsBurst", "ThrottlingBurstNeedsRate",
		"ProtectedNeedsAuthIssuer", "AnonymousContradictsAuthIssuer", "AuthAudienceNeedsIssuer", "AuthJwksUrlNeedsIssuer",
		"AuthScopesNeedIssuer", "AuthAudienceMatchesEndpointUrl", "AuthClientIdsNeedIssuer",
		"StreamingCertificateNeedsDoorAndUrl", "ProtectedStreamingNeedsDomain", "AuthStepUpScopesNeedIssuer", "StreamingMetadataNeedsScopes",
		"AuthRegistrationNeedsIssuer", "AuthRegistrationNeedsEndpoints", "AuthRegistrationSettingsNeedClientId", "AuthScopePrefixNeedsIssuer"} {
		if d := find(rules, name, "Assertions", "0", "AssertDescription"); d == nil || d.Value == "" {
			t.Errorf("rule %s: no assertion with a description", name)
		}
	}
	for _, o := range []string{"EndpointUrl", "ApiId", "ClaimsTableName", "StateKeyArn", "StateKeyAliasName", "McpLogGroupName", "ConformanceLogGroupName", "ConformanceUrl", "StreamAuthorizerLogGroupName"} {
		if _, ok := tmpl.Outputs[o]; !ok {
			t.Errorf("output %s missing", o)
		}
	}
	for _, o := range []string{"ConformanceLogGroupName", "ConformanceUrl"} {
		want(t, find(r, "Outputs", o, "Condition"), "DeployConformance", o+" Condition")
	}
}

// TestAuthorization: the default deploys protected (an issuer, or an
// explicit AllowAnonymous=true), and the Rules refuse the settings that
// contradict each other or would look protected while open.
func TestAuthorization(t *testing.T) {
	r := raw(t)
	params := at(t, r, "Parameters")
	want(t, at(t, params, "AllowAnonymous", "Default"), "false", "AllowAnonymous Default")
	want(t, at(t, params, "AllowAnonymous", "AllowedValues"), "[true, false]", "AllowAnonymous AllowedValues")
	// Empty: the function's own scopes (the demo's are its code's, not
	// the template's).
	want(t, at(t, params, "AuthScopesSupported", "Default"), "", "AuthScopesSupported Default")
	for _, p := range []string{"AuthIssuer", "AuthAudience", "AuthJwksUrl"} {
		want(t, at(t, params, p, "Default"), "", p+" Default")
		re := regexp.MustCompile(at(t, params, p, "AllowedPattern").Value)
		for _, bad := range []string{"http://a.example", "https://a.example/#f", "https://a.example?q", "a.example"} {
			if re.MatchString(bad) {
				t.Errorf("%s admits %q", p, bad)
			}
		}
	}
	want(t, at(t, r, "Conditions", "HasAuthIssuer"), "!Not [!Equals [!Ref AuthIssuer, ]]", "HasAuthIssuer")
	want(t, at(t, r, "Conditions", "HasAuthAudience"), "!Not [!Equals [!Ref AuthAudience, ]]", "HasAuthAudience")

	rules := at(t, r, "Rules")
	for name, w := range map[string][2]string{
		"ProtectedNeedsAuthIssuer":       {"!Equals [!Ref AllowAnonymous, false]", "!Not [!Equals [!Ref AuthIssuer, ]]"},
		"AnonymousContradictsAuthIssuer": {"!Equals [!Ref AllowAnonymous, true]", "!Equals [!Ref AuthIssuer, ]"},
		"AuthAudienceNeedsIssuer":        {"!Equals [!Ref AuthIssuer, ]", "!Equals [!Ref AuthAudience, ]"},
		"AuthJwksUrlNeedsIssuer":         {"!Equals [!Ref AuthIssuer, ]", "!Equals [!Ref AuthJwksUrl, ]"},
		"AuthClientIdsNeedIssuer":        {"!Equals [!Ref AuthIssuer, ]", "!Equals [!Ref AuthClientIds, ]"},
		"AuthScopesNeedIssuer":           {"!Equals [!Ref AuthIssuer, ]", "!Equals [!Ref AuthScopesSupported, ]"},
		"StreamingMetadataNeedsScopes":   {"!And [!Equals [!Ref StreamingDoor, true], !Not [!Equals [!Ref AuthIssuer, ]]]", "!Not [!Equals [!Ref AuthScopesSupported, ]]"},
		"AuthAudienceMatchesEndpointUrl": {"!And [!Not [!Equals [!Ref AuthAudience, ]], !Not [!Equals [!Ref EndpointUrl, ]]]", "!Equals [!Ref AuthAudience, !Ref EndpointUrl]"},
	} {
		want(t, find(rules, name, "RuleCondition"), w[0], name+" RuleCondition")
		want(t, find(rules, name, "Assertions", "0", "Assert"), w[1], name+" Assert")
	}
	d := at(t, rules, "ProtectedNeedsAuthIssuer", "Assertions", "0", "AssertDescription").Value
	for _, s := range []string{"AuthIssuer", "Cognito", "AllowAnonymous=true"} {
		if !strings.Contains(d, s) {
			t.Errorf("ProtectedNeedsAuthIssuer's description does not mention %s: %q", s, d)
		}
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
// on its own routes, and may use only the state key.
func TestConformanceFunction(t *testing.T) {
	r := raw(t)
	res := at(t, r, "Resources")
	fn := at(t, res, "ConformanceFunction")
	want(t, at(t, fn, "Condition"), "DeployConformance", "ConformanceFunction Condition")
	want(t, at(t, fn, "Metadata", "BuildMethod"), "makefile", "build method")
	vars := env(t, r, "ConformanceFunction")
	want(t, vars["MCP_AUDIENCE"], "", "conformance MCP_AUDIENCE")
	want(t, vars["MCP_STATE_KMS_KEY"], "!GetAtt StateKey.Arn", "conformance MCP_STATE_KMS_KEY")
	if v := vars["MCP_CLAIMS_TABLE"]; v != nil {
		t.Errorf("the conformance fixture gets the claims table (%s)", show(v))
	}
	for _, name := range []string{"ConformanceIntegration", "ConformancePostRoute", "ConformanceAnyRoute", "ConformanceInvokePermission", "ConformanceLogGroup"} {
		want(t, find(res, name, "Condition"), "DeployConformance", name+" Condition")
	}
	want(t, at(t, res, "ConformanceIntegration", "Properties", "IntegrationUri"), "!GetAtt ConformanceFunction.Arn", "conformance IntegrationUri")
	want(t, at(t, res, "ConformancePostRoute", "Properties", "RouteKey"), "POST /conformance", "conformance POST route")
	want(t, at(t, res, "ConformanceAnyRoute", "Properties", "RouteKey"), "ANY /conformance", "conformance ANY route")
	for _, route := range []string{"ConformancePostRoute", "ConformanceAnyRoute"} {
		want(t, at(t, res, route, "Properties", "Target"), "!Sub integrations/${ConformanceIntegration}", route+" Target")
		want(t, at(t, res, route, "Properties", "AuthorizationType"), "!If [UseJwt, JWT, NONE]", route+" AuthorizationType")
	}

	// The state key, its tasks' items and its listen streams' event log
	// (no claims, no notes).
	stmts := at(t, fn, "Properties", "Policies", "0", "Statement")
	if len(stmts.Content) != 3 || show(at(t, stmts, "0", "Resource")) != "!GetAtt ClaimsTable.Arn" || show(at(t, stmts, "1", "Resource")) != "!GetAtt ClaimsTable.Arn" ||
		show(at(t, stmts, "2", "Resource")) != "!GetAtt StateKey.Arn" {
		t.Errorf("conformance policy: %s", show(stmts))
	}
	if got := scalars(at(t, stmts, "0", "Action")); strings.Join(got, ",") != "dynamodb:PutItem,dynamodb:GetItem" {
		t.Errorf("task actions %v", got)
	}
	if got := scalars(at(t, stmts, "1", "Action")); strings.Join(got, ",") != "dynamodb:BatchWriteItem,dynamodb:Query,dynamodb:UpdateItem" {
		t.Errorf("event log actions %v", got)
	}
	if got := scalars(at(t, stmts, "2", "Action")); strings.Join(got, ",") != "kms:GenerateDataKey,kms:Decrypt" {
		t.Errorf("key actions %v", got)
	}
	if _, ok := parse(t).Parameters["ConformanceFixture"]; !ok {
		t.Error("no ConformanceFixture parameter")
	}
}

// --- dependencies -------------------------------------------------------------

var subRef = regexp.MustCompile(`\$\{([^!}][^}]*)\}`)

// refs collects the logical IDs n refers to (Ref, GetAtt, Sub, in short
// or long form) into out. Names starting AWS:: are pseudo parameters.
func refs(n *yaml.Node, out map[string]bool) {
	if n == nil {
		return
	}
	add := func(name string) {
		name, _, _ = strings.Cut(name, ".")
		if name != "" && !strings.HasPrefix(name, "AWS::") {
			out[name] = true
		}
	}
	sub := func(s *yaml.Node) {
		// !Sub "..." or !Sub ["...", {Var: value}]: the variables defined in
		// the mapping are not logical IDs, their values may refer to some.
		str, vars := s, (*yaml.Node)(nil)
		if s.Kind == yaml.SequenceNode && len(s.Content) == 2 {
			str, vars = s.Content[0], s.Content[1]
		}
		local := map[string]bool{}
		if vars != nil {
			for i := 0; i+1 < len(vars.Content); i += 2 {
				local[vars.Content[i].Value] = true
				refs(vars.Content[i+1], out)
			}
		}
		for _, m := range subRef.FindAllStringSubmatch(str.Value, -1) {
			if !local[m[1]] {
				add(m[1])
			}
		}
	}
	switch n.Tag {
	case "!Ref":
		add(n.Value)
		return
	case "!GetAtt":
		if n.Kind == yaml.SequenceNode && len(n.Content) > 0 {
			add(n.Content[0].Value)
		} else {
			add(n.Value)
		}
		return
	case "!Sub":
		sub(n)
		return
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		switch v := n.Content[1]; n.Content[0].Value {
		case "Ref":
			add(v.Value)
			return
		case "Fn::GetAtt":
			if v.Kind == yaml.SequenceNode && len(v.Content) > 0 {
				add(v.Content[0].Value)
			} else {
				add(v.Value)
			}
			return
		case "Fn::Sub":
			sub(v)
			return
		}
	}
	for _, c := range n.Content {
		refs(c, out)
	}
}

// dependencies maps each resource to the resources it refers to or
// DependsOn; a SAM function also depends on what Globals' Function section
// refers to, as SAM copies it in.
func dependencies(root *yaml.Node) map[string][]string {
	res := find(root, "Resources")
	if res == nil {
		return nil
	}
	names := map[string]bool{}
	for i := 0; i+1 < len(res.Content); i += 2 {
		names[res.Content[i].Value] = true
	}
	deps := map[string][]string{}
	for i := 0; i+1 < len(res.Content); i += 2 {
		name, body := res.Content[i].Value, res.Content[i+1]
		found := map[string]bool{}
		refs(find(body, "Properties"), found)
		if d := find(body, "DependsOn"); d != nil {
			for _, s := range scalars(d) {
				found[s] = true
			}
		}
		if ty := find(body, "Type"); ty != nil && ty.Value == "AWS::Serverless::Function" {
			refs(find(root, "Globals", "Function"), found)
		}
		for d := range found {
			if names[d] {
				deps[name] = append(deps[name], d)
			}
		}
		slices.Sort(deps[name])
	}
	return deps
}

// cycle is one dependency cycle as a path "A -> B -> A", or "".
func cycle(deps map[string][]string) string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(string) string
	visit = func(n string) string {
		state[n] = open
		stack = append(stack, n)
		for _, d := range deps[n] {
			switch state[d] {
			case open:
				i := slices.Index(stack, d)
				return strings.Join(append(slices.Clone(stack[i:]), d), " -> ")
			case unseen:
				if c := visit(d); c != "" {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return ""
	}
	names := make([]string, 0, len(deps))
	for n := range deps {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if state[n] == unseen {
			if c := visit(n); c != "" {
				return c
			}
		}
	}
	return ""
}

// reaches lists the resources from reaches through its dependencies.
func reaches(deps map[string][]string, from string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(n string) {
		for _, d := range deps[n] {
			if !seen[d] {
				seen[d] = true
				walk(d)
			}
		}
	}
	walk(from)
	return seen
}

// apiReferences names the API Gateway resources a function depends on.
func apiReferences(root *yaml.Node, deps map[string][]string, fn string) []string {
	var out []string
	for d := range reaches(deps, fn) {
		if ty := find(root, "Resources", d, "Type"); ty != nil && strings.HasPrefix(ty.Value, "AWS::ApiGateway") {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// TestNoDependencyCycle: CloudFormation refuses a template whose resources
// depend on each other in a circle (cfn-lint's E3004), and a function must
// not depend on the API at all: the integration and the API's permission
// depend on the function, and the endpoint's URL comes from EndpointUrl
// or from each request.
func TestNoDependencyCycle(t *testing.T) {
	r := raw(t)
	deps := dependencies(r)
	if c := cycle(deps); c != "" {
		t.Errorf("dependency cycle: %s", c)
	}
	for _, fn := range resourcesOfType(t, r, "AWS::Serverless::Function") {
		if api := apiReferences(r, deps, fn); len(api) > 0 {
			t.Errorf("%s depends on %v: a function must not refer to the API", fn, api)
		}
	}
	// The checks see the references that matter here.
	if !slices.Contains(deps["McpIntegration"], "McpFunction") || !slices.Contains(deps["McpPostRoute"], "McpIntegration") {
		t.Errorf("dependencies missed: McpIntegration %v, McpPostRoute %v", deps["McpIntegration"], deps["McpPostRoute"])
	}
	if !slices.Contains(deps["ConformanceFunction"], "StateKey") {
		t.Errorf("Globals' references are not counted for ConformanceFunction: %v", deps["ConformanceFunction"])
	}
}

// TestDependencyChecks: the checks above catch what they are for.
func TestDependencyChecks(t *testing.T) {
	const doc = `
Globals:
  Function:
    Environment:
      Variables:
        URL: !Sub "https://${Api}.execute-api.${AWS::Region}.${AWS::URLSuffix}/mcp"
Resources:
  Api:
    Type: AWS::ApiGatewayV2::Api
    Properties:
      Description: {"Fn::Sub": ["${X}", {X: {"Fn::GetAtt": [Fn, Arn]}}]}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Description: !Sub "${!Literal} ${Table.Arn}"
  Table:
    Type: AWS::DynamoDB::Table
    DependsOn: [Other]
  Other:
    Type: AWS::SNS::Topic
    Properties:
      TopicName: {Ref: AWS::StackName}
`
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	root := n.Content[0]
	deps := dependencies(root)
	if got := strings.Join(deps["Fn"], ","); got != "Api,Table" {
		t.Errorf("Fn depends on %s, want Api,Table", got)
	}
	if got := cycle(deps); got != "Api -> Fn -> Api" {
		t.Errorf("cycle = %q", got)
	}
	if got := apiReferences(root, deps, "Fn"); !slices.Equal(got, []string{"Api"}) {
		t.Errorf("apiReferences = %v", got)
	}
	if got := reaches(deps, "Table"); !got["Other"] || len(got) != 1 {
		t.Errorf("Table reaches %v", got)
	}
}

// TestStreamingDoor: the optional REST API streams the function's
// response (STREAM transfer mode, the response-streaming invocation path)
// for as long as the function may run, the function answers its events
// as a stream, and with an issuer the protected-resource metadata is a
// mock integration: API Gateway answers it without the function.
func TestStreamingDoor(t *testing.T) {
	r := raw(t)
	res := at(t, r, "Resources")
	integ := at(t, res, "StreamMcpMethod", "Properties", "Integration")
	want(t, at(t, integ, "Type"), "AWS_PROXY", "stream integration Type")
	want(t, at(t, integ, "ResponseTransferMode"), "STREAM", "ResponseTransferMode")
	if uri := at(t, integ, "Uri"); uri.Tag != "!Sub" || !strings.Contains(uri.Value, "/2021-11-15/functions/${McpFunction.Arn}/response-streaming-invocations") {
		t.Errorf("stream integration Uri %s", show(uri))
	}
	var timeoutMs, fnTimeout int
	fmt.Sscan(at(t, integ, "TimeoutInMillis").Value, &timeoutMs)
	fmt.Sscan(at(t, r, "Globals", "Function", "Timeout").Value, &fnTimeout)
	if timeoutMs != fnTimeout*1000 {
		t.Errorf("stream integration timeout %d ms, the function's %d s", timeoutMs, fnTimeout)
	}
	want(t, env(t, r, "McpFunction")["MCP_STREAM_EVENTS"], "rest", "MCP_STREAM_EVENTS")
	for _, name := range []string{"StreamApi", "StreamMcpResource", "StreamMcpMethod", "StreamStage", "StreamInvokePermission"} {
		want(t, find(res, name, "Condition"), "DeployStreaming", name+" Condition")
	}
	for _, name := range []string{"StreamMetadataMethod", "StreamMetadataMcpMethod"} {
		want(t, find(res, name, "Condition"), "StreamingMetadata", name+" Condition")
		want(t, at(t, res, name, "Properties", "Integration", "Type"), "MOCK", name+" integration")
		want(t, at(t, res, name, "Properties", "HttpMethod"), "GET", name+" HttpMethod")
	}
	want(t, at(t, res, "StreamStage", "Properties", "StageName"), rie.RESTStage, "the stage the REST front serves")
	want(t, at(t, res, "StreamMcpResource", "Properties", "PathPart"), "mcp", "the REST front's one resource")
	want(t, at(t, res, "StreamMetadataResource", "Properties", "PathPart"), "oauth-protected-resource", "metadata path")
	want(t, at(t, res, "StreamWellKnownResource", "Properties", "PathPart"), ".well-known", "well-known path")
	want(t, at(t, res, "StreamInvokePermission", "Properties", "SourceArn"),
		"!Sub arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${StreamApi}/*/*/mcp", "stream permission")

	// The mock integrations answer the document the REST front serves
	// (rie.TemplateMetadata), scopes_supported included: through this
	// door a client learns its scopes from it.
	doc := string(rie.TemplateMetadata("${EndpointUrl}", "${AuthServer}", []string{"${Scopes}"}))
	for _, name := range []string{"StreamMetadataMethod", "StreamMetadataMcpMethod"} {
		sub := at(t, res, name, "Properties", "Integration", "IntegrationResponses", "0", "ResponseTemplates", "application/json")
		if sub.Tag != "!Sub" || at(t, sub, "0").Value != doc {
			t.Errorf("%s's document %s, want %s", name, show(sub), doc)
		}
		want(t, at(t, sub, "1", "Scopes"), `!Join [",", !Split [ , !Ref AuthScopesSupported]]`, name+" scopes")
		// With the registration facade the endpoint is its own
		// authorization server, as the function's metadata says.
		want(t, at(t, sub, "1", "AuthServer"), "!If [HasRegistration, !Ref EndpointUrl, !Ref AuthIssuer]", name+" authorization server")
	}

	// The registration facade on this door: the metadata a mock answers
	// (rie.TemplateAuthorizationServerMetadata, held to the function's by
	// package rie's tests) and POST /mcp/register to the function, outside
	// the authorizer, with a permission of its own.
	want(t, at(t, r, "Conditions", "StreamingRegistration"), "!And [!Condition StreamingMetadata, !Condition HasRegistration]", "StreamingRegistration")
	for _, name := range []string{"StreamASMetadataResource", "StreamASMetadataMcpResource", "StreamASMetadataMcpMethod", "StreamRegisterResource", "StreamRegisterMethod", "StreamRegisterInvokePermission"} {
		want(t, find(res, name, "Condition"), "StreamingRegistration", name+" Condition")
	}
	// The facade's deployment is the one without the proxy
	// (TestAuthProxyRoutes has the other).
	want(t, find(res, "StreamDeploymentWithRegistration", "Condition"), "StreamingRegistrationOnly", "StreamDeploymentWithRegistration Condition")
	want(t, at(t, res, "StreamASMetadataResource", "Properties", "PathPart"), "oauth-authorization-server", "facade metadata path")
	want(t, at(t, res, "StreamASMetadataMcpResource", "Properties", "PathPart"), "mcp", "facade metadata path")
	want(t, at(t, res, "StreamRegisterResource", "Properties", "PathPart"), strings.TrimPrefix(auth.RegistrationSuffix, "/"), "registration path")
	want(t, at(t, res, "StreamRegisterResource", "Properties", "ParentId"), "!Ref StreamMcpResource", "registration under /mcp")
	want(t, at(t, res, "StreamRegisterMethod", "Properties", "HttpMethod"), "POST", "registration method")
	want(t, at(t, res, "StreamRegisterMethod", "Properties", "AuthorizationType"), "NONE", "registration outside the authorizer")
	want(t, at(t, res, "StreamRegisterMethod", "Properties", "Integration", "Uri"), show(at(t, res, "StreamMcpMethod", "Properties", "Integration", "Uri")), "registration integration")
	want(t, at(t, res, "StreamRegisterInvokePermission", "Properties", "SourceArn"),
		"!Sub arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${StreamApi}/*/POST/mcp/register", "registration permission")
	// Its CORS preflight, answered by the function by AllowedOrigins.
	for _, name := range []string{"StreamRegisterPreflightMethod", "StreamRegisterPreflightPermission"} {
		want(t, find(res, name, "Condition"), "StreamingRegistration", name+" Condition")
	}
	want(t, at(t, res, "StreamRegisterPreflightMethod", "Properties", "HttpMethod"), "OPTIONS", "registration preflight method")
	want(t, at(t, res, "StreamRegisterPreflightMethod", "Properties", "ResourceId"), "!Ref StreamRegisterResource", "registration preflight resource")
	want(t, at(t, res, "StreamRegisterPreflightMethod", "Properties", "AuthorizationType"), "NONE", "registration preflight outside the authorizer")
	want(t, at(t, res, "StreamRegisterPreflightMethod", "Properties", "Integration", "Uri"), show(at(t, res, "StreamMcpMethod", "Properties", "Integration", "Uri")), "registration preflight integration")
	want(t, at(t, res, "StreamRegisterPreflightPermission", "Properties", "SourceArn"),
		"!Sub arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${StreamApi}/*/OPTIONS/mcp/register", "registration preflight permission")
	if deps := scalars(at(t, res, "StreamDeploymentWithRegistration", "DependsOn")); !slices.Contains(deps, "StreamRegisterPreflightMethod") {
		t.Errorf("the deployment with the facade does not depend on its preflight's method: %v", deps)
	}
	asDoc := string(rie.TemplateAuthorizationServerMetadata("${EndpointUrl}", "${AuthAuthorizationEndpoint}", "${AuthTokenEndpoint}", []string{"${Scopes}"}))
	// Without the proxy (the !If's else branch: TestAuthProxyRoutes).
	sub := at(t, res, "StreamASMetadataMcpMethod", "Properties", "Integration", "2", "IntegrationResponses", "0", "ResponseTemplates", "application/json")
	if sub.Tag != "!Sub" || at(t, sub, "0").Value != asDoc {
		t.Errorf("StreamASMetadataMcpMethod's document %s, want %s", show(sub), asDoc)
	}
	want(t, at(t, sub, "1", "Scopes"), `!Join [",", !Split [ , !Ref AuthScopesSupported]]`, "facade metadata scopes")
	want(t, at(t, res, "StreamStage", "Properties", "DeploymentId"),
		"!If [StreamingProxy, !Ref StreamDeploymentWithProxy, !If [StreamingRegistration, !Ref StreamDeploymentWithRegistration, !If [StreamingMetadata, !Ref StreamDeploymentWithMetadata, !Ref StreamDeployment]]]", "stream stage deployment")
}

// TestStreamingDoorOAuth: protected, the streaming door is reachable
// where RFC 9728 says clients look (a custom domain, the stage at its
// root) and sends the challenges itself: the function is its /mcp
// method's Lambda REQUEST authorizer, uncached, and its refusals are the
// gateway responses the REST front applies (rie.TemplateGatewayResponses).
func TestStreamingDoorOAuth(t *testing.T) {
	r := raw(t)
	res := at(t, r, "Resources")
	for _, name := range []string{"StreamAuthorizer", "StreamAuthorizerPermission", "StreamUnauthorizedResponse", "StreamAccessDeniedResponse", "StreamAuthorizerErrorResponse", "StreamAuthorizerFailureResponse"} {
		want(t, find(res, name, "Condition"), "StreamingMetadata", name+" Condition")
	}
	for _, name := range []string{"StreamDomainName", "StreamBasePathMapping"} {
		want(t, find(res, name, "Condition"), "HasStreamingDomain", name+" Condition")
	}
	method := at(t, res, "StreamMcpMethod", "Properties")
	want(t, at(t, method, "AuthorizationType"), "!If [StreamingMetadata, CUSTOM, NONE]", "AuthorizationType")
	want(t, at(t, method, "AuthorizerId"), "!If [StreamingMetadata, !Ref StreamAuthorizer, !Ref AWS::NoValue]", "AuthorizerId")
	authz := at(t, res, "StreamAuthorizer", "Properties")
	want(t, at(t, authz, "Type"), "REQUEST", "authorizer Type")
	want(t, at(t, authz, "IdentitySource"), "method.request.header.Authorization", "authorizer IdentitySource")
	want(t, at(t, authz, "AuthorizerResultTtlInSeconds"), "0", "authorizer TTL")
	want(t, at(t, authz, "AuthorizerUri"), "!Sub arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${StreamAuthorizerFunction.Arn}/invocations", "authorizer URI")
	want(t, at(t, res, "StreamAuthorizerPermission", "Properties", "FunctionName"), "!GetAtt StreamAuthorizerFunction.Arn", "authorizer permission FunctionName")
	// The authorizer is the MCP function's binary, a function of its own
	// (its failed invocations, every refused token, are its own Errors),
	// with the token settings the MCP function validates with, and no
	// response stream (its answer is a policy).
	for _, name := range []string{"StreamAuthorizerFunction", "StreamAuthorizerLogGroup", "StreamAuthorizerUnavailableAlarm"} {
		want(t, find(res, name, "Condition"), "StreamingMetadata", name+" Condition")
	}
	want(t, at(t, res, "StreamAuthorizerFunction", "Metadata", "BuildMethod"), "makefile", "authorizer BuildMethod")
	want(t, at(t, res, "StreamAuthorizerFunction", "Properties", "CodeUri"), ".", "authorizer CodeUri")
	mcpEnv, authzEnv := env(t, r, "McpFunction"), env(t, r, "StreamAuthorizerFunction")
	for name, v := range mcpEnv {
		if strings.HasPrefix(name, "MCP_AUTH_") || name == "MCP_AUDIENCE" || name == "MCP_ALLOW_ANONYMOUS" {
			// The authorizer exists only with an issuer: where the MCP
			// function's value depends on one, the authorizer's is that
			// branch.
			if v.Tag == "!If" && v.Content[0].Value == "HasAuthIssuer" {
				v = v.Content[1]
			}
			want(t, authzEnv[name], show(v), "StreamAuthorizerFunction "+name)
		}
	}
	if v, ok := authzEnv["MCP_STREAM_EVENTS"]; ok {
		t.Errorf("the authorizer streams %s", show(v))
	}
	want(t, at(t, res, "StreamAuthorizerPermission", "Properties", "SourceArn"),
		"!Sub arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${StreamApi}/authorizers/${StreamAuthorizer}", "authorizer permission")
	want(t, at(t, res, "StreamDomainName", "Properties", "DomainName"), `!Select [2, !Split [/, !Ref EndpointUrl]]`, "domain name")
	want(t, at(t, res, "StreamBasePathMapping", "Properties", "Stage"), "!Ref StreamStage", "mapped stage")
	if find(res, "StreamBasePathMapping", "Properties", "BasePath") != nil {
		t.Error("the base path mapping has a BasePath: the stage must be at the domain's root")
	}
	deps := scalars(at(t, res, "StreamDeploymentWithMetadata", "DependsOn"))
	for _, name := range []string{"StreamUnauthorizedResponse", "StreamAccessDeniedResponse", "StreamAuthorizerErrorResponse", "StreamAuthorizerFailureResponse"} {
		if !slices.Contains(deps, name) {
			t.Errorf("the deployment does not depend on %s: a gateway response takes effect when the API is deployed", name)
		}
	}

	// Each gateway response is the front's, with the template's values
	// for the metadata URL and the step-up scopes.
	if n := len(resourcesOfType(t, r, "AWS::ApiGateway::GatewayResponse")); n != 4 {
		t.Errorf("%d gateway responses in the template, the front has 4", n)
	}
	gw := rie.TemplateGatewayResponses("https://${Host}/.well-known/oauth-protected-resource/mcp", []string{"${Scopes}"})
	for name, typ := range map[string]string{"StreamUnauthorizedResponse": "UNAUTHORIZED", "StreamAccessDeniedResponse": "ACCESS_DENIED", "StreamAuthorizerErrorResponse": "AUTHORIZER_CONFIGURATION_ERROR",
		"StreamAuthorizerFailureResponse": "AUTHORIZER_FAILURE"} {
		p := at(t, res, name, "Properties")
		g := gw[typ]
		want(t, at(t, p, "ResponseType"), typ, name+" ResponseType")
		want(t, at(t, p, "StatusCode"), fmt.Sprint(g.Status), name+" StatusCode")
		want(t, at(t, p, "ResponseTemplates", "application/json"), g.Body, name+" body")
		params := at(t, p, "ResponseParameters")
		if n := len(params.Content) / 2; n != len(g.Headers) {
			t.Errorf("%s sets %d headers, the front %d", name, n, len(g.Headers))
		}
		for h, v := range g.Headers {
			got := at(t, params, "gatewayresponse.header."+h)
			if got.Tag == "!Sub" {
				got = at(t, got, "0")
			}
			if got.Value != "'"+v+"'" {
				t.Errorf("%s %s = %s, want '%s'", name, h, got.Value, v)
			}
		}
	}
	for _, name := range []string{"StreamUnauthorizedResponse", "StreamAccessDeniedResponse"} {
		want(t, at(t, res, name, "Properties", "ResponseParameters", "gatewayresponse.header.WWW-Authenticate", "1", "Host"),
			`!Select [2, !Split [/, !Ref EndpointUrl]]`, name+" host")
	}
	want(t, at(t, res, "StreamAccessDeniedResponse", "Properties", "ResponseParameters", "gatewayresponse.header.WWW-Authenticate", "1", "Scopes"),
		"!If [HasStepUpScopes, !Ref AuthStepUpScopes, !Ref AuthScopesSupported]", "step-up scopes")
	want(t, find(r, "Outputs", "StreamingUrl", "Value"),
		"!If [HasStreamingDomain, !Ref EndpointUrl, !Sub https://${StreamApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/v1/mcp]", "StreamingUrl")
}

// TestQuotasParameter: every value the Quotas parameter's pattern admits
// is one the function starts with (endpoint.LoadConfig's MCP_QUOTAS), so a
// value CloudFormation takes never stops the function at its cold start;
// the pattern refuses what the function refuses, and a little more (the
// spaces the function trims); the function's environment names it.
func TestQuotasParameter(t *testing.T) {
	r := raw(t)
	pat := regexp.MustCompile(at(t, r, "Parameters", "Quotas", "AllowedPattern").Value)
	starts := func(v string) error {
		_, err := endpoint.LoadConfig(func(k string) string {
			if k == endpoint.EnvQuotas {
				return v
			}
			return ""
		})
		return err
	}
	for _, v := range []string{"", "off", "calls=600/1m", "calls=120/1m,tasks=3,streams=off", "tasks=0", "streams=10000", "calls=off,tasks=off", "calls=1/1s", "calls=100000/24h", "calls=1/9999s", "calls=1/999m"} {
		if !pat.MatchString(v) {
			t.Errorf("Quotas=%q: refused by the pattern", v)
		}
		if err := starts(v); err != nil {
			t.Errorf("Quotas=%q: admitted by the pattern, and the function does not start: %v", v, err)
		}
	}
	for _, v := range []string{"calls=600", "tasks=-1", "tasks=10001", "workers=3", "calls=600/1m, tasks=3", "on", ",", "calls=0/1m", "streams=ten", "calls=5/0s", "calls=1/25h", "calls=1/1000m", "calls=1/10000s"} {
		if pat.MatchString(v) {
			t.Errorf("Quotas=%q: admitted by the pattern (the function: %v)", v, starts(v))
		}
	}
	want(t, env(t, r, "McpFunction")[endpoint.EnvQuotas], "!Ref Quotas", "McpFunction "+endpoint.EnvQuotas)
}

// TestToolPolicy: ToolPolicyArn, the tools' own grants, is a customer
// managed policy attached to the MCP function's role (which runs the task
// workers too) only when it is set, and to no other function's; its
// pattern admits a customer managed policy's ARN of an account and
// refuses an AWS managed one (broad by design), other ARNs, wildcards
// and lists.
func TestToolPolicy(t *testing.T) {
	r := raw(t)
	policies := at(t, r, "Resources", "McpFunction", "Properties", "Policies")
	if len(policies.Content) != 2 {
		t.Fatalf("McpFunction has %d Policies, want the statements and the tool policy", len(policies.Content))
	}
	want(t, policies.Content[1], "!If [HasToolPolicy, !Ref ToolPolicyArn, !Ref AWS::NoValue]", "McpFunction's tool policy")
	want(t, at(t, r, "Conditions", "HasToolPolicy"), "!Not [!Equals [!Ref ToolPolicyArn, ]]", "HasToolPolicy")
	res := at(t, r, "Resources")
	for i := 0; i+1 < len(res.Content); i += 2 {
		if name := res.Content[i].Value; name != "McpFunction" && strings.Contains(show(res.Content[i+1]), "ToolPolicyArn") {
			t.Errorf("%s names ToolPolicyArn: the tools' grants are the MCP function's alone", name)
		}
	}
	param := at(t, r, "Parameters", "ToolPolicyArn")
	want(t, at(t, param, "Default"), "", "ToolPolicyArn Default")
	pat := regexp.MustCompile(at(t, param, "AllowedPattern").Value)
	for _, v := range []string{"", "arn:aws:iam::123456789012:policy/counter-tools", "arn:aws:iam::123456789012:policy/mcp/tools/counter+v2@x.y_z-1",
		"arn:aws-us-gov:iam::123456789012:policy/counter-tools", "arn:aws-cn:iam::123456789012:policy/a"} {
		if !pat.MatchString(v) {
			t.Errorf("ToolPolicyArn=%q refused", v)
		}
	}
	for _, v := range []string{"arn:aws:iam::aws:policy/AmazonDynamoDBFullAccess", "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
		"arn:aws:iam::123456789012:role/tools", "arn:aws:iam::123456789012:policy/*", "arn:aws:iam::123456789012:policy/",
		"arn:aws:iam::123456789012:policy/a,arn:aws:iam::123456789012:policy/b", "arn:aws:iam::1234:policy/a", "counter-tools",
		" arn:aws:iam::123456789012:policy/a", "arn:aws:iam::123456789012:policy/a b"} {
		if pat.MatchString(v) {
			t.Errorf("ToolPolicyArn=%q admitted", v)
		}
	}
}

// TestToolSettings: ToolSettings reaches the MCP function, and only it,
// as MCP_TOOL_SETTINGS, for its tools (the library reads no such
// variable); printable ASCII, at most 1024 characters (Lambda's
// variables share 4 KB).
func TestToolSettings(t *testing.T) {
	r := raw(t)
	want(t, env(t, r, "McpFunction")["MCP_TOOL_SETTINGS"], "!Ref ToolSettings", "McpFunction MCP_TOOL_SETTINGS")
	for _, fn := range resourcesOfType(t, r, "AWS::Serverless::Function") {
		if v, ok := env(t, r, fn)["MCP_TOOL_SETTINGS"]; fn != "McpFunction" && ok {
			t.Errorf("%s has MCP_TOOL_SETTINGS = %s: the tools run in the MCP function alone", fn, show(v))
		}
	}
	param := at(t, r, "Parameters", "ToolSettings")
	want(t, at(t, param, "Default"), "", "ToolSettings Default")
	want(t, at(t, param, "MaxLength"), "1024", "ToolSettings MaxLength")
	pat := regexp.MustCompile(at(t, param, "AllowedPattern").Value)
	for _, v := range []string{"", "table=counter-counts,bucket=counter-exports", `{"table": "t"}`, "~ !"} {
		if !pat.MatchString(v) {
			t.Errorf("ToolSettings=%q refused", v)
		}
	}
	for _, v := range []string{"a\nb", "a\tb", "caf\u00e9"} {
		if pat.MatchString(v) {
			t.Errorf("ToolSettings=%q admitted", v)
		}
	}
}
