package deploy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/serverless-mcp/mcp-lambda/pkg/auth"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
)

// proxyRoutes are the authorization proxy's resources after the
// endpoint's path (pkg/auth's routing table), and the streaming door's
// method for each.
var proxyRoutes = []struct {
	method, suffix, restMethod string
}{
	{"GET", auth.AuthorizeSuffix, "StreamProxyAuthorizeMethod"},
	{"POST", auth.AuthorizeSuffix, "StreamProxyConsentMethod"},
	{"GET", auth.CallbackSuffix, "StreamProxyCallbackMethod"},
	{"POST", auth.TokenSuffix, "StreamProxyTokenMethod"},
	{"OPTIONS", auth.TokenSuffix, "StreamProxyTokenPreflightMethod"},
}

// proxyRouteKeys are the HTTP API's route keys of the proxy's resources.
func proxyRouteKeys() []string {
	var out []string
	for _, r := range proxyRoutes {
		out = append(out, r.method+" "+auth.DefaultEndpointPath+r.suffix)
	}
	return out
}

// value is what a template value is under the parameters params: a
// scalar, a !Ref of a parameter, or an !If whose condition is one of the
// template's Conditions (!Equals, !Not, !And, !Or, !Condition, !Ref of a
// parameter). ok is false for anything else.
func value(root, n *yaml.Node, params map[string]string) (v string, ok bool) {
	switch {
	case n == nil:
		return "", false
	case n.Tag == "!Ref" && n.Kind == yaml.ScalarNode:
		v, ok = params[n.Value]
		return v, ok
	case n.Tag == "!If" && n.Kind == yaml.SequenceNode && len(n.Content) == 3:
		c, ok := condition(root, at0(root, "Conditions", n.Content[0].Value), params)
		if !ok {
			return "", false
		}
		if c {
			return value(root, n.Content[1], params)
		}
		return value(root, n.Content[2], params)
	case n.Kind == yaml.ScalarNode && (n.Tag == "" || strings.HasPrefix(n.Tag, "!!")):
		return n.Value, true
	}
	return "", false
}

// at0 is find, for helpers without a *testing.T.
func at0(n *yaml.Node, path ...string) *yaml.Node { return find(n, path...) }

// condition evaluates a Condition's expression under params.
func condition(root, n *yaml.Node, params map[string]string) (c, ok bool) {
	if n == nil {
		return false, false
	}
	switch n.Tag {
	case "!Condition":
		return condition(root, find(root, "Conditions", n.Value), params)
	case "!Equals":
		if len(n.Content) != 2 {
			return false, false
		}
		a, ok1 := value(root, n.Content[0], params)
		b, ok2 := value(root, n.Content[1], params)
		return a == b, ok1 && ok2
	case "!Not":
		if len(n.Content) != 1 {
			return false, false
		}
		c, ok := condition(root, n.Content[0], params)
		return !c, ok
	case "!And", "!Or":
		and := n.Tag == "!And"
		c = and
		for _, e := range n.Content {
			x, ok := condition(root, e, params)
			if !ok {
				return false, false
			}
			if and {
				c = c && x
			} else {
				c = c || x
			}
		}
		return c, true
	}
	return false, false
}

// TestAuthProxyRoutes: with AuthProxy, the authorization proxy's public
// OAuth endpoints (its authorization endpoint and consent form, its
// callback, its token endpoint and that endpoint's preflight) reach the
// function on both doors outside every authorizer; on the streaming door
// the authorization server metadata is the function's answer (it names
// the proxy's endpoints) instead of the facade's mock; the function gets
// the proxy's settings only when the proxy is on (it refuses them
// otherwise); the Rules make the proxy need the facade; and the callback
// the operator registers at the provider is an output.
func TestAuthProxyRoutes(t *testing.T) {
	r := raw(t)
	res := at(t, r, "Resources")
	conds := at(t, r, "Conditions")
	want(t, at(t, conds, "AuthProxyOn"), "!Equals [!Ref AuthProxy, true]", "AuthProxyOn")
	want(t, at(t, conds, "StreamingProxy"), "!And [!Condition StreamingRegistration, !Condition AuthProxyOn]", "StreamingProxy")
	want(t, at(t, conds, "StreamingRegistrationOnly"), "!And [!Condition StreamingRegistration, !Not [!Condition AuthProxyOn]]", "StreamingRegistrationOnly")

	// The parameters.
	params := at(t, r, "Parameters")
	for _, p := range []string{"AuthProxy", "AuthProxyOmitResource"} {
		want(t, at(t, params, p, "AllowedValues"), "[false, true]", p+" AllowedValues")
		want(t, at(t, params, p, "Default"), "false", p+" Default")
	}
	want(t, at(t, params, "AuthProxyPreApprovedClients", "Default"), "", "AuthProxyPreApprovedClients Default")
	for p, words := range map[string][]string{
		"AuthProxy":             {"authorization server", "client ID metadata document", "register", auth.CallbackSuffix, "AuthProxyCallbackUrl", "AuthRegistrationClientId"},
		"AuthProxyOmitResource": {"Entra ID", "Application ID URI", "AuthScopePrefix"},
	} {
		d := at(t, params, p, "Description").Value
		for _, w := range words {
			if !strings.Contains(d, w) {
				t.Errorf("%s's description does not say %q: %q", p, w, d)
			}
		}
	}

	// The HTTP API: a route each, to the function's integration, without
	// the authorizer, with the proxy.
	routes := map[string]*yaml.Node{}
	for _, name := range resourcesOfType(t, r, "AWS::ApiGatewayV2::Route") {
		routes[at(t, res, name, "Properties", "RouteKey").Value] = at(t, res, name)
	}
	for _, key := range proxyRouteKeys() {
		route := routes[key]
		if route == nil {
			t.Errorf("no HTTP API route %s", key)
			continue
		}
		want(t, find(route, "Condition"), "AuthProxyOn", key+" Condition")
		want(t, at(t, route, "Properties", "Target"), "!Sub integrations/${McpIntegration}", key+" Target")
		want(t, at(t, route, "Properties", "AuthorizationType"), "NONE", key+" AuthorizationType")
		if id := find(route, "Properties", "AuthorizerId"); id != nil {
			t.Errorf("HTTP API route %s has AuthorizerId %s", key, show(id))
		}
	}
	// The metadata is the function's on this door whatever the proxy (the
	// facade's route, which the proxy's Rule makes exist).
	asKey := "GET " + auth.AuthorizationServerMetadataPath + auth.DefaultEndpointPath
	if route := routes[asKey]; route == nil {
		t.Errorf("no HTTP API route %s", asKey)
	} else {
		want(t, find(route, "Condition"), "HasRegistration", asKey+" Condition")
		want(t, at(t, route, "Properties", "Target"), "!Sub integrations/${McpIntegration}", asKey+" Target")
		want(t, at(t, route, "Properties", "AuthorizationType"), "NONE", asKey+" AuthorizationType")
	}
	// One permission covers every route of the API.
	want(t, at(t, res, "McpInvokePermission", "Properties", "SourceArn"),
		"!Sub arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${McpApi}/*/*/*", "McpInvokePermission SourceArn")

	// The streaming door: a resource under /mcp for each suffix, a method
	// for each route, on the function (as /mcp's, streamed) outside the
	// authorizer, with a permission naming its method and path.
	fnURI := show(at(t, res, "StreamMcpMethod", "Properties", "Integration", "Uri"))
	permissions := map[string]*yaml.Node{} // by SourceArn
	for _, name := range resourcesOfType(t, r, "AWS::Lambda::Permission") {
		p := at(t, res, name)
		permissions[show(find(p, "Properties", "SourceArn"))] = p
	}
	permitted := func(what, sourceArn, cond string) {
		t.Helper()
		p := permissions[sourceArn]
		if p == nil {
			t.Errorf("%s: no permission with SourceArn %s", what, sourceArn)
			return
		}
		want(t, find(p, "Condition"), cond, what+" permission Condition")
		want(t, find(p, "Properties", "FunctionName"), "!GetAtt McpFunction.Arn", what+" permission FunctionName")
		want(t, find(p, "Properties", "Principal"), "apigateway.amazonaws.com", what+" permission Principal")
	}
	integration := func(what string, integ *yaml.Node) {
		t.Helper()
		want(t, find(integ, "Type"), "AWS_PROXY", what+" integration Type")
		want(t, find(integ, "IntegrationHttpMethod"), "POST", what+" IntegrationHttpMethod")
		want(t, find(integ, "Uri"), fnURI, what+" integration Uri")
		want(t, find(integ, "ResponseTransferMode"), "STREAM", what+" ResponseTransferMode")
	}
	for _, rt := range proxyRoutes {
		what := rt.method + " " + auth.DefaultEndpointPath + rt.suffix
		m := find(res, rt.restMethod)
		if m == nil {
			t.Errorf("%s: no streaming door method %s", what, rt.restMethod)
			continue
		}
		want(t, find(m, "Type"), "AWS::ApiGateway::Method", rt.restMethod+" Type")
		want(t, find(m, "Condition"), "StreamingProxy", rt.restMethod+" Condition")
		p := at(t, m, "Properties")
		want(t, find(p, "RestApiId"), "!Ref StreamApi", rt.restMethod+" RestApiId")
		want(t, find(p, "HttpMethod"), rt.method, rt.restMethod+" HttpMethod")
		want(t, find(p, "AuthorizationType"), "NONE", rt.restMethod+" AuthorizationType")
		if id := find(p, "AuthorizerId"); id != nil {
			t.Errorf("%s has AuthorizerId %s", rt.restMethod, show(id))
		}
		integration(rt.restMethod, find(p, "Integration"))
		resID := find(p, "ResourceId")
		if resID == nil || resID.Tag != "!Ref" {
			t.Errorf("%s ResourceId %s", rt.restMethod, show(resID))
			continue
		}
		rsc := find(res, resID.Value)
		want(t, find(rsc, "Type"), "AWS::ApiGateway::Resource", resID.Value+" Type")
		want(t, find(rsc, "Condition"), "StreamingProxy", resID.Value+" Condition")
		want(t, find(rsc, "Properties", "ParentId"), "!Ref StreamMcpResource", resID.Value+" under /mcp")
		want(t, find(rsc, "Properties", "PathPart"), strings.TrimPrefix(rt.suffix, "/"), resID.Value+" PathPart")
		permitted(rt.restMethod, "!Sub arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${StreamApi}/*/"+rt.method+auth.DefaultEndpointPath+rt.suffix, "StreamingProxy")
	}
	// The registration, which the proxy also serves, is the facade's, on
	// the door whenever the proxy is (StreamingProxy implies it).
	for _, name := range []string{"StreamRegisterMethod", "StreamRegisterPreflightMethod"} {
		want(t, find(res, name, "Condition"), "StreamingRegistration", name+" Condition")
		want(t, find(res, name, "Properties", "AuthorizationType"), "NONE", name+" AuthorizationType")
	}
	// No method of the door but /mcp's is behind the authorizer.
	for _, name := range resourcesOfType(t, r, "AWS::ApiGateway::Method") {
		if name == "StreamMcpMethod" {
			continue
		}
		want(t, find(res, name, "Properties", "AuthorizationType"), "NONE", name+" AuthorizationType")
		if id := find(res, name, "Properties", "AuthorizerId"); id != nil {
			t.Errorf("%s has AuthorizerId %s", name, show(id))
		}
	}

	// The authorization server metadata: with the proxy, the function's
	// (the integration switches in place), else the facade's mock
	// (TestStreamingDoor holds that one to the function's text).
	as := at(t, res, "StreamASMetadataMcpMethod")
	want(t, find(as, "Condition"), "StreamingRegistration", "StreamASMetadataMcpMethod Condition")
	want(t, find(as, "Properties", "AuthorizationType"), "NONE", "StreamASMetadataMcpMethod AuthorizationType")
	asInteg := at(t, as, "Properties", "Integration")
	if asInteg.Tag != "!If" || len(asInteg.Content) != 3 || asInteg.Content[0].Value != "AuthProxyOn" {
		t.Fatalf("StreamASMetadataMcpMethod Integration %s: want !If [AuthProxyOn, the function, the mock]", show(asInteg))
	}
	integration("StreamASMetadataMcpMethod with the proxy", asInteg.Content[1])
	want(t, find(asInteg.Content[2], "Type"), "MOCK", "StreamASMetadataMcpMethod without the proxy")
	if mr := find(as, "Properties", "MethodResponses"); mr != nil && (mr.Tag != "!If" || mr.Content[0].Value != "AuthProxyOn" || show(mr.Content[1]) != "!Ref AWS::NoValue") {
		t.Errorf("StreamASMetadataMcpMethod MethodResponses %s: the mock's, not the function's", show(mr))
	}
	want(t, find(res, "StreamASMetadataMcpResource", "Properties", "ParentId"), "!Ref StreamASMetadataResource", "AS metadata resource")
	want(t, find(res, "StreamASMetadataResource", "Properties", "PathPart"), strings.TrimPrefix(auth.AuthorizationServerMetadataPath, "/.well-known/"), "AS metadata path")
	permitted("StreamASMetadataMcpMethod", "!Sub arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${StreamApi}/*/GET"+auth.AuthorizationServerMetadataPath+auth.DefaultEndpointPath, "StreamingProxy")

	// The deployment with the proxy takes every method of the facade's
	// deployment and the proxy's, and the stage picks it first.
	dep := at(t, res, "StreamDeploymentWithProxy")
	want(t, find(dep, "Type"), "AWS::ApiGateway::Deployment", "StreamDeploymentWithProxy Type")
	want(t, find(dep, "Condition"), "StreamingProxy", "StreamDeploymentWithProxy Condition")
	deps := scalars(at(t, dep, "DependsOn"))
	need := scalars(at(t, res, "StreamDeploymentWithRegistration", "DependsOn"))
	for _, rt := range proxyRoutes {
		need = append(need, rt.restMethod)
	}
	for _, name := range need {
		if !slices.Contains(deps, name) {
			t.Errorf("StreamDeploymentWithProxy does not depend on %s", name)
		}
	}
	want(t, find(res, "StreamDeploymentWithRegistration", "Condition"), "StreamingRegistrationOnly", "StreamDeploymentWithRegistration Condition")
	if id := at(t, res, "StreamStage", "Properties", "DeploymentId"); id.Tag != "!If" || id.Content[0].Value != "StreamingProxy" || show(id.Content[1]) != "!Ref StreamDeploymentWithProxy" {
		t.Errorf("StreamStage DeploymentId %s: want the proxy's deployment under StreamingProxy", show(id))
	}

	// The function's settings: its environment under every setting of the
	// proxy's parameters the Rules admit (with the facade), which the
	// function starts with, the proxy on exactly when AuthProxy is true.
	// The authorizer (the same binary) gets the same.
	rules := at(t, r, "Rules")
	for _, fn := range []string{"McpFunction", "StreamAuthorizerFunction"} {
		vars := env(t, r, fn)
		want(t, vars[endpoint.EnvAuthProxy], "!Ref AuthProxy", fn+" "+endpoint.EnvAuthProxy)
		want(t, vars[endpoint.EnvAuthProxyPreApproved], "!If [AuthProxyOn, !Ref AuthProxyPreApprovedClients, ]", fn+" "+endpoint.EnvAuthProxyPreApproved)
		want(t, vars[endpoint.EnvAuthProxyOmitResource], "!If [AuthProxyOn, !Ref AuthProxyOmitResource, ]", fn+" "+endpoint.EnvAuthProxyOmitResource)
		for _, proxy := range []string{"false", "true"} {
			for _, pre := range []string{"", "https://app.example.com/oauth/client.json,https://b.example.org/.well-known/c"} {
				for _, omit := range []string{"false", "true"} {
					p := proxySettings(params, map[string]string{"AuthProxy": proxy, "AuthProxyPreApprovedClients": pre, "AuthProxyOmitResource": omit})
					if refused := refusedBy(t, r, rules, p); len(refused) > 0 {
						if proxy == "true" || (pre == "" && omit == "false") {
							t.Errorf("AuthProxy=%s %q %s refused by %v", proxy, pre, omit, refused)
						}
						continue
					}
					got := map[string]string{}
					for k, n := range vars {
						if v, ok := value(r, n, p); ok {
							got[k] = v
						}
					}
					cfg, err := endpoint.LoadConfig(func(k string) string { return got[k] })
					if err != nil {
						t.Errorf("%s with AuthProxy=%s, AuthProxyPreApprovedClients=%q, AuthProxyOmitResource=%s does not start: %v", fn, proxy, pre, omit, err)
						continue
					}
					if on := cfg.AuthProxy != nil; on != (proxy == "true") {
						t.Errorf("%s with AuthProxy=%s: proxy on %v", fn, proxy, on)
					} else if on && (len(cfg.AuthProxy.PreApproved) > 0) != (pre != "") || on && cfg.AuthProxy.OmitResource != (omit == "true") {
						t.Errorf("%s with AuthProxy=%s, %q, %s: %+v", fn, proxy, pre, omit, *cfg.AuthProxy)
					}
				}
			}
		}
	}

	// The Rules: the proxy needs the facade and its issuer; its settings
	// need the proxy.
	for name, w := range map[string][2]string{
		"AuthProxyNeedsRegistration": {"!Equals [!Ref AuthProxy, true]",
			"!And [!Not [!Equals [!Ref AuthIssuer, ]], !Not [!Equals [!Ref AuthRegistrationClientId, ]], !Not [!Equals [!Ref AuthAuthorizationEndpoint, ]], !Not [!Equals [!Ref AuthTokenEndpoint, ]]]"},
		"AuthProxySettingsNeedProxy": {"!Equals [!Ref AuthProxy, false]",
			"!And [!Equals [!Ref AuthProxyPreApprovedClients, ], !Equals [!Ref AuthProxyOmitResource, false]]"},
	} {
		want(t, find(rules, name, "RuleCondition"), w[0], name+" RuleCondition")
		want(t, find(rules, name, "Assertions", "0", "Assert"), w[1], name+" Assert")
		d := find(rules, name, "Assertions", "0", "AssertDescription")
		if d == nil || d.Value == "" {
			t.Errorf("rule %s: no assertion with a description", name)
		}
	}
	d := at(t, rules, "AuthProxyNeedsRegistration", "Assertions", "0", "AssertDescription").Value
	for _, s := range []string{"AuthIssuer", "AuthRegistrationClientId", "AuthAuthorizationEndpoint", "AuthTokenEndpoint", "AuthProxyCallbackUrl"} {
		if !strings.Contains(d, s) {
			t.Errorf("AuthProxyNeedsRegistration's description does not mention %s: %q", s, d)
		}
	}

	// The output: the canonical endpoint URL (AuthAudience, EndpointUrl,
	// else the API's own, the EndpointUrl output) and the callback's
	// suffix, as the function sends it to the provider.
	out := at(t, r, "Outputs", "AuthProxyCallbackUrl")
	want(t, find(out, "Condition"), "AuthProxyOn", "AuthProxyCallbackUrl Condition")
	apiURL := at(t, r, "Outputs", "EndpointUrl", "Value")
	if apiURL.Tag != "!Sub" {
		t.Fatalf("the EndpointUrl output %s", show(apiURL))
	}
	want(t, at(t, out, "Value"), fmt.Sprintf("!If [HasAuthAudience, !Sub ${AuthAudience}%[1]s, !If [HasEndpointUrl, !Sub ${EndpointUrl}%[1]s, !Sub %[2]s%[1]s]]",
		auth.CallbackSuffix, apiURL.Value), "AuthProxyCallbackUrl Value")
	want(t, at(t, conds, "HasEndpointUrl"), "!Not [!Equals [!Ref EndpointUrl, ]]", "HasEndpointUrl")
}

// refusedBy are the Rules whose assertions fail under params.
func refusedBy(t *testing.T, root, rules *yaml.Node, params map[string]string) []string {
	t.Helper()
	var out []string
	for i := 0; i+1 < len(rules.Content); i += 2 {
		name, rule := rules.Content[i].Value, rules.Content[i+1]
		if rc := find(rule, "RuleCondition"); rc != nil {
			c, ok := condition(root, rc, params)
			if !ok {
				t.Fatalf("rule %s: cannot evaluate %s", name, show(rc))
			}
			if !c {
				continue
			}
		}
		for _, a := range at(t, rule, "Assertions").Content {
			c, ok := condition(root, at(t, a, "Assert"), params)
			if !ok {
				t.Fatalf("rule %s: cannot evaluate %s", name, show(a))
			}
			if !c {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// TestAuthProxyPreApprovedClientsParameter: every value the parameter's
// pattern admits is one the function starts with (the proxy on), so a
// value CloudFormation takes never stops it at its cold start; the
// pattern refuses what the function refuses, and a little more (ports,
// spaces the function trims, empty path segments, quotes).
func TestAuthProxyPreApprovedClientsParameter(t *testing.T) {
	r := raw(t)
	pat := regexp.MustCompile(at(t, r, "Parameters", "AuthProxyPreApprovedClients", "AllowedPattern").Value)
	starts := func(v string) error {
		_, err := endpoint.LoadConfig(func(k string) string {
			return map[string]string{
				endpoint.EnvAuthIssuer: "https://issuer.example.com", endpoint.EnvAuthRegistrationClientID: "client",
				endpoint.EnvAuthAuthorizationEndpoint: "https://issuer.example.com/authorize", endpoint.EnvAuthTokenEndpoint: "https://issuer.example.com/token",
				endpoint.EnvAuthProxy: "true", endpoint.EnvAuthProxyPreApproved: v,
			}[k]
		})
		return err
	}
	for _, v := range []string{"", "https://app.example.com/c", "https://app.example.com/oauth/client-metadata.json", "https://a.example/c,https://b.example/d/",
		"https://a.example/.well-known/mcp-client", "https://a.example/...", "https://a.example/..x/.y", "https://a.example/c?v=1", "https://a.example/~u/c%20d", "https://a-b.example.co.uk/c:d@e"} {
		if !pat.MatchString(v) {
			t.Errorf("AuthProxyPreApprovedClients=%q: refused by the pattern", v)
		}
		if err := starts(v); err != nil {
			t.Errorf("AuthProxyPreApprovedClients=%q: admitted by the pattern, and the function does not start: %v", v, err)
		}
	}
	for _, v := range []string{"http://a.example/c", "https://a.example", "https://a.example/", "https://a.example/..", "https://a.example/./c", "https://a.example/c/../d",
		"https://a.example/c#f", "https://a.example/c\\d", "https://user@a.example/c", "javascript:alert(1)", ",", "https://a.example/c,", ",https://a.example/c",
		"https://a.example/c, https://b.example/d", "https://a.example:443/c", "https:///c", "https://a.example/c d", "https://a.example/é"} {
		if pat.MatchString(v) {
			t.Errorf("AuthProxyPreApprovedClients=%q: admitted by the pattern (the function: %v)", v, starts(v))
		}
	}
}

// TestAuthProxyClientSecret: for a confidential app client at the
// provider, AuthProxyClientSecretArn names the Secrets Manager secret
// holding its client secret. The function gets the ARN, and its role may
// read that one secret, exactly when the parameter is set (a Rule refuses
// it without the proxy); the parameter admits only a whole secret ARN, so
// the policy names one secret; under every setting of the proxy's
// parameters the Rules admit, the statement names exactly the parameter's
// ARN and the function starts with its environment; the authorizer gets
// the same setting (the same binary) and no access; nothing else in the
// template reaches Secrets Manager.
func TestAuthProxyClientSecret(t *testing.T) {
	r := raw(t)
	res := at(t, r, "Resources")
	params := at(t, r, "Parameters")
	conds := at(t, r, "Conditions")
	rules := at(t, r, "Rules")

	// The parameter.
	p := at(t, params, "AuthProxyClientSecretArn")
	want(t, at(t, p, "Type"), "String", "AuthProxyClientSecretArn Type")
	want(t, at(t, p, "Default"), "", "AuthProxyClientSecretArn Default")
	d := at(t, p, "Description").Value
	for _, w := range []string{"AuthProxy", "confidential", "Entra ID", "Cognito", "SecretString", "client secret", "AuthRegistrationClientId",
		"5 minutes", "customer managed", "kms:Decrypt"} {
		if !strings.Contains(d, w) {
			t.Errorf("AuthProxyClientSecretArn's description does not say %q: %q", w, d)
		}
	}
	pat := regexp.MustCompile(at(t, p, "AllowedPattern").Value)
	for _, v := range []string{"", "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp/proxy-client-AbC123",
		"arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:prod/mcp_proxy+x=y.z@w-a1B2c3",
		"arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:s-000000"} {
		if !pat.MatchString(v) {
			t.Errorf("AuthProxyClientSecretArn=%q: refused by the pattern", v)
		}
	}
	// Not a name or a partial ARN (the policy would name no secret), no
	// wildcard (it would name more than one), no other service's ARN.
	for _, v := range []string{"mcp-proxy-AbC123", "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcpproxy",
		"arn:aws:secretsmanager:us-east-1:123456789012:secret:*", "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-??????",
		"arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp*-AbC123", "arn:aws:secretsmanager:*:123456789012:secret:mcp-AbC123",
		"arn:aws:secretsmanager:us-east-1:*:secret:mcp-AbC123", "arn:aws:secretsmanager:us-east-1:123456789012:secret:-AbC123",
		"arn:aws:ssm:us-east-1:123456789012:parameter/mcp-AbC123", "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-AbC123 ",
		"arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-AbC123\n", "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-AbC123,arn:aws:secretsmanager:us-east-1:123456789012:secret:b-AbC123"} {
		if pat.MatchString(v) {
			t.Errorf("AuthProxyClientSecretArn=%q: admitted by the pattern", v)
		}
	}

	// The Condition and the Rule.
	want(t, at(t, conds, "HasAuthProxyClientSecret"), "!And [!Condition AuthProxyOn, !Not [!Equals [!Ref AuthProxyClientSecretArn, ]]]", "HasAuthProxyClientSecret")
	want(t, find(rules, "AuthProxyClientSecretNeedsProxy", "RuleCondition"), "!Not [!Equals [!Ref AuthProxyClientSecretArn, ]]", "AuthProxyClientSecretNeedsProxy RuleCondition")
	want(t, find(rules, "AuthProxyClientSecretNeedsProxy", "Assertions", "0", "Assert"), "!Equals [!Ref AuthProxy, true]", "AuthProxyClientSecretNeedsProxy Assert")
	if d := find(rules, "AuthProxyClientSecretNeedsProxy", "Assertions", "0", "AssertDescription"); d == nil || !strings.Contains(d.Value, "AuthProxy=true") {
		t.Errorf("rule AuthProxyClientSecretNeedsProxy: no description naming AuthProxy=true: %s", show(d))
	}

	// The variable, for both functions.
	for _, fn := range []string{"McpFunction", "StreamAuthorizerFunction"} {
		want(t, env(t, r, fn)[endpoint.EnvAuthProxyClientSecret], "!If [HasAuthProxyClientSecret, !Ref AuthProxyClientSecretArn, ]", fn+" "+endpoint.EnvAuthProxyClientSecret)
	}

	// The statement: the one place in the template that names Secrets
	// Manager, on the MCP function's role, under the Condition.
	var named []string
	var walk func(path string, n *yaml.Node)
	walk = func(path string, n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && strings.Contains(strings.ToLower(n.Value), "secretsmanager:") && !strings.HasPrefix(path, "Parameters/") {
			named = append(named, path)
		}
		for i, c := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 0 {
				continue
			}
			key := fmt.Sprint(i)
			if n.Kind == yaml.MappingNode {
				key = n.Content[i-1].Value
			}
			walk(path+key+"/", c)
		}
	}
	walk("", r)
	var stmt *yaml.Node
	stmts := at(t, res, "McpFunction", "Properties", "Policies", "0", "Statement")
	for i, st := range stmts.Content {
		if st.Tag == "!If" && len(st.Content) == 3 && find(st.Content[1], "Sid") != nil && find(st.Content[1], "Sid").Value == "AuthProxyClientSecret" {
			if stmt != nil {
				t.Errorf("a second statement AuthProxyClientSecret, at %d", i)
			}
			stmt = st
		}
	}
	if stmt == nil {
		t.Fatalf("McpFunction has no statement !If [HasAuthProxyClientSecret, {Sid: AuthProxyClientSecret, ...}, !Ref AWS::NoValue]: %s", show(stmts))
	}
	inner := fmt.Sprintf("Resources/McpFunction/Properties/Policies/0/Statement/%d/1/Action/", slices.Index(stmts.Content, stmt))
	if len(named) != 1 || named[0] != inner {
		t.Errorf("the template names Secrets Manager at %v, want only %s", named, inner)
	}
	want(t, stmt.Content[0], "HasAuthProxyClientSecret", "AuthProxyClientSecret Condition")
	want(t, stmt.Content[2], "!Ref AWS::NoValue", "AuthProxyClientSecret without the secret")
	st := stmt.Content[1]
	want(t, at(t, st, "Effect"), "Allow", "AuthProxyClientSecret Effect")
	if a := scalars(at(t, st, "Action")); !slices.Equal(a, []string{"secretsmanager:GetSecretValue"}) {
		t.Errorf("AuthProxyClientSecret Action %v, want secretsmanager:GetSecretValue alone", a)
	}
	for i := 0; i+1 < len(st.Content); i += 2 {
		if k := st.Content[i].Value; !slices.Contains([]string{"Sid", "Effect", "Action", "Resource"}, k) {
			t.Errorf("AuthProxyClientSecret has %s %s", k, show(st.Content[i+1]))
		}
	}
	resource := at(t, st, "Resource")

	// Under every setting of the proxy's parameters (with the facade, its
	// issuer and endpoints): the Rules refuse exactly the proxy's settings
	// without the proxy; otherwise the statement is there exactly when
	// the secret is set and names exactly its ARN, each function's
	// environment carries exactly that ARN (none without the secret), and
	// each starts with it.
	const arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp/proxy-client-AbC123"
	vars := map[string]map[string]*yaml.Node{"McpFunction": env(t, r, "McpFunction"), "StreamAuthorizerFunction": env(t, r, "StreamAuthorizerFunction")}
	admitted := 0
	for _, proxy := range []string{"false", "true"} {
		for _, pre := range []string{"", "https://app.example.com/oauth/client.json"} {
			for _, omit := range []string{"false", "true"} {
				for _, secret := range []string{"", arn} {
					what := fmt.Sprintf("AuthProxy=%s, AuthProxyPreApprovedClients=%q, AuthProxyOmitResource=%s, AuthProxyClientSecretArn=%q", proxy, pre, omit, secret)
					p := proxySettings(params, map[string]string{"AuthProxy": proxy, "AuthProxyPreApprovedClients": pre, "AuthProxyOmitResource": omit,
						"AuthProxyClientSecretArn": secret})
					refused := refusedBy(t, r, rules, p)
					if mistaken := proxy == "false" && (pre != "" || omit == "true" || secret != ""); mistaken != (len(refused) > 0) {
						t.Errorf("%s: refused by %v", what, refused)
					}
					if secret != "" && proxy == "false" && !slices.Contains(refused, "AuthProxyClientSecretNeedsProxy") {
						t.Errorf("%s: not refused by AuthProxyClientSecretNeedsProxy (%v)", what, refused)
					}
					if len(refused) > 0 {
						continue
					}
					admitted++
					present, ok := condition(r, at(t, conds, "HasAuthProxyClientSecret"), p)
					if !ok || present != (secret != "") {
						t.Errorf("%s: the statement present %v (evaluated %v)", what, present, ok)
					}
					if got, ok := value(r, resource, p); present && (!ok || got != secret) {
						t.Errorf("%s: the statement's Resource %q, want %q", what, got, secret)
					}
					for _, fn := range []string{"McpFunction", "StreamAuthorizerFunction"} {
						got := map[string]string{}
						for k, n := range vars[fn] {
							if v, ok := value(r, n, p); ok {
								got[k] = v
							}
						}
						if v, ok := got[endpoint.EnvAuthProxyClientSecret]; !ok || v != secret {
							t.Errorf("%s with %s: %s=%q, want %q", fn, what, endpoint.EnvAuthProxyClientSecret, v, secret)
						}
						cfg, err := endpoint.LoadConfig(func(k string) string { return got[k] })
						if err != nil {
							t.Errorf("%s with %s does not start: %v", fn, what, err)
							continue
						}
						if on := cfg.AuthProxy != nil; on != (proxy == "true") {
							t.Errorf("%s with %s: proxy on %v", fn, what, on)
							continue
						}
						if cfg.AuthProxy != nil && cfg.AuthProxy.ClientSecretARN != secret {
							t.Errorf("%s with %s: ClientSecretARN %q", fn, what, cfg.AuthProxy.ClientSecretARN)
						}
					}
				}
			}
		}
	}
	// Which is why the template passes it only with the proxy: the
	// function refuses it without.
	if _, err := endpoint.LoadConfig(func(k string) string {
		return map[string]string{endpoint.EnvAuthIssuer: "https://issuer.example.com", endpoint.EnvAuthProxyClientSecret: arn}[k]
	}); err == nil {
		t.Errorf("the function starts with %s and no proxy", endpoint.EnvAuthProxyClientSecret)
	}
	if admitted != 1+8 { // without the proxy, none of its settings; with it, any
		t.Errorf("%d settings admitted, want 9", admitted)
	}
}

// proxySettings are the template's parameter defaults (params, its
// Parameters) with what the proxy needs set (an issuer, the facade's
// client and endpoints, a scope, the endpoint's URL), then set.
func proxySettings(params *yaml.Node, set map[string]string) map[string]string {
	p := map[string]string{}
	for i := 0; i+1 < len(params.Content); i += 2 {
		p[params.Content[i].Value] = find(params.Content[i+1], "Default").Value
	}
	for k, v := range map[string]string{
		"AuthIssuer": "https://issuer.example.com", "AuthRegistrationClientId": "client", "AuthScopesSupported": "notes:read",
		"AuthAuthorizationEndpoint": "https://issuer.example.com/authorize", "AuthTokenEndpoint": "https://issuer.example.com/token",
		"EndpointUrl": "https://mcp.example.com/mcp",
	} {
		p[k] = v
	}
	for k, v := range set {
		p[k] = v
	}
	return p
}
