package endpoint_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/repo"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
)

// platform are the variables the endpoint reads that Lambda sets, not
// its operator: they are no settings of the README's table.
var platform = []string{"AWS_LAMBDA_RUNTIME_API", "AWS_LAMBDA_FUNCTION_NAME"}

// sdkSettings are the AWS SDK's own variables the README documents: the
// SDK the endpoint makes its clients with reads them (sam local points
// them at DynamoDB Local and local-kms), not LoadConfig.
var sdkSettings = []string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_KMS"}

// readSettings are the variables LoadConfig reads, whatever it is given:
// the union over a local start, a Lambda start and starts with every
// feature that reads more turned on (the authorization proxy with its
// facade, the quotas' deprecated alias).
func readSettings(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, env := range []map[string]string{
		{},
		{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", endpoint.EnvAllowAnonymous: "true"},
		{endpoint.EnvAuthIssuer: "https://issuer.example", endpoint.EnvAuthProxy: "true",
			endpoint.EnvAuthRegistrationClientID: "c", endpoint.EnvAuthAuthorizationEndpoint: "https://issuer.example/authorize",
			endpoint.EnvAuthTokenEndpoint: "https://issuer.example/token", endpoint.EnvAudience: "https://mcp.example/mcp"},
		{endpoint.EnvQuotas: "tasks=3"},
	} {
		endpoint.LoadConfig(func(k string) string {
			seen[k] = true
			return env[k]
		})
	}
	out := slices.Clone(sdkSettings)
	for k := range seen {
		if !slices.Contains(platform, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestREADMEConfigurationTable: the README's configuration table lists
// exactly the settings the endpoint reads, so that neither a setting
// nobody can find nor a row for one that does nothing survives a change.
func TestREADMEConfigurationTable(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(root + "/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Configuration\n")
	if !ok {
		t.Fatal("README.md has no Configuration section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	name := regexp.MustCompile("`([A-Z][A-Z0-9_]+)`")
	var listed []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			listed = append(listed, m[1])
		}
	}
	slices.Sort(listed)
	read := readSettings(t)
	for _, k := range read {
		if !slices.Contains(listed, k) {
			t.Errorf("the endpoint reads %s; the README's configuration table does not list it", k)
		}
	}
	for _, k := range listed {
		if !slices.Contains(read, k) {
			t.Errorf("the README's configuration table lists %s, which the endpoint does not read", k)
		}
	}
}
