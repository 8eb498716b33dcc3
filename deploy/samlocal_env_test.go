package deploy

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// sam local gives a function only the variables template.yaml declares
// for it: an env-vars file's value for anything else is dropped without
// a word. These tests hold deploy/sam-local-env.json to the template and
// to the local-kms seed file that `make local-aws` loads.

const (
	samLocalEnvPath = "sam-local-env.json"
	kmsSeedPath     = "local-kms-seed.yaml"
)

func samLocalEnv(t *testing.T) map[string]map[string]string {
	t.Helper()
	b, err := os.ReadFile(samLocalEnvPath)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]map[string]string
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("%s: %v", samLocalEnvPath, err)
	}
	return env
}

// samChild is the value under key in a mapping node, or nil.
func samChild(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func samPath(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		n = samChild(n, k)
	}
	return n
}

func samKeys(n *yaml.Node) []string {
	var out []string
	if n != nil && n.Kind == yaml.MappingNode {
		for i := 0; i < len(n.Content); i += 2 {
			out = append(out, n.Content[i].Value)
		}
	}
	return out
}

func TestSAMLocalEnvDeclared(t *testing.T) {
	root := raw(t)
	global := samKeys(samPath(root, "Globals", "Function", "Environment", "Variables"))
	for fn, vars := range samLocalEnv(t) {
		res := samPath(root, "Resources", fn)
		if res == nil || samChild(res, "Type").Value != "AWS::Serverless::Function" {
			t.Errorf("%s: %s is not a function of template.yaml", samLocalEnvPath, fn)
			continue
		}
		declared := append(slices.Clone(global), samKeys(samPath(res, "Properties", "Environment", "Variables"))...)
		for v := range vars {
			if !slices.Contains(declared, v) {
				t.Errorf("%s sets %s for %s, which template.yaml does not declare for it: sam local would drop it", samLocalEnvPath, v, fn)
			}
		}
	}
}

func TestSAMLocalEnvMatchesSeed(t *testing.T) {
	env := samLocalEnv(t)
	mcp := env["McpFunction"]
	for _, v := range []string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_KMS", "MCP_CLAIMS_TABLE", "MCP_STATE_KMS_KEY"} {
		if mcp[v] == "" {
			t.Errorf("%s: McpFunction does not set %s", samLocalEnvPath, v)
		}
	}
	// Without an issuer the function refuses to start on Lambda, sam
	// local's emulator included, unless anonymous access is asked for;
	// and the template passes the scopes only with an issuer, which
	// sam local might resolve otherwise.
	if mcp["MCP_ALLOW_ANONYMOUS"] != "true" {
		t.Errorf("%s: McpFunction does not set MCP_ALLOW_ANONYMOUS=true: sam local would not start it", samLocalEnvPath)
	}
	for _, v := range []string{"MCP_AUTH_ISSUER", "MCP_AUTH_SCOPES_SUPPORTED"} {
		if val, ok := mcp[v]; !ok || val != "" {
			t.Errorf("%s: McpFunction must set %s empty, which MCP_ALLOW_ANONYMOUS=true needs", samLocalEnvPath, v)
		}
	}
	for fn, vars := range env {
		if k := vars["MCP_STATE_KMS_KEY"]; k != "" && k != mcp["MCP_STATE_KMS_KEY"] {
			t.Errorf("%s names key %s, McpFunction %s: the seed holds one", fn, k, mcp["MCP_STATE_KMS_KEY"])
		}
		if e := vars["AWS_ENDPOINT_URL_KMS"]; e != "" && e != mcp["AWS_ENDPOINT_URL_KMS"] {
			t.Errorf("%s sends KMS calls to %s, McpFunction to %s: make local-aws runs one local-kms", fn, e, mcp["AWS_ENDPOINT_URL_KMS"])
		}
	}
	// arn:aws:kms:us-east-1:123456789012:key/ID: sam local's placeholder
	// region and account, which local-kms is started with.
	arn := strings.Split(mcp["MCP_STATE_KMS_KEY"], ":")
	if len(arn) != 6 || arn[3] != "us-east-1" || arn[4] != "123456789012" || !strings.HasPrefix(arn[5], "key/") {
		t.Fatalf("MCP_STATE_KMS_KEY=%s: want arn:aws:kms:us-east-1:123456789012:key/ID (sam local's region and account)", mcp["MCP_STATE_KMS_KEY"])
	}
	b, err := os.ReadFile(kmsSeedPath)
	if err != nil {
		t.Fatal(err)
	}
	var seed struct {
		Keys struct {
			Symmetric struct {
				Aes []struct {
					Metadata struct {
						KeyID string `yaml:"KeyId"`
					} `yaml:"Metadata"`
					BackingKeys []string `yaml:"BackingKeys"`
				} `yaml:"Aes"`
			} `yaml:"Symmetric"`
		} `yaml:"Keys"`
	}
	if err := yaml.Unmarshal(b, &seed); err != nil {
		t.Fatalf("%s: %v", kmsSeedPath, err)
	}
	id := strings.TrimPrefix(arn[5], "key/")
	found := false
	for _, k := range seed.Keys.Symmetric.Aes {
		if k.Metadata.KeyID == id {
			found = true
			if len(k.BackingKeys) == 0 || len(k.BackingKeys[0]) != 64 {
				t.Errorf("%s: key %s needs a fixed 256-bit backing key (64 hex digits), so sealed state survives a restart", kmsSeedPath, id)
			}
		}
	}
	if !found {
		t.Errorf("%s does not seed key %s", kmsSeedPath, id)
	}
}
