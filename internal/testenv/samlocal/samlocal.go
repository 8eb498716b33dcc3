// Package samlocal reads deploy/sam-local-env.json, the file a developer
// passes to `sam local invoke --env-vars`, and gives the rest of what
// `sam local` puts in the function's environment. `make local-aws`, `make
// invoke ENV=...` and the functions' integration test all read the same
// file, so the ports, the table and the key a developer uses are the ones
// the tests prove.
package samlocal

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The variables through which the AWS SDK for Go v2 (and every other
// current SDK) takes a service's endpoint; template.yaml declares them
// empty so that an env-vars file may set them.
const (
	EnvDynamoDBEndpoint = "AWS_ENDPOINT_URL_DYNAMODB"
	EnvKMSEndpoint      = "AWS_ENDPOINT_URL_KMS"
)

// The function's own variables that the file sets.
const (
	EnvClaimsTable = "MCP_CLAIMS_TABLE"
	EnvStateKMSKey = "MCP_STATE_KMS_KEY"
)

// ReadEnv returns the variables the env-vars file at path sets for
// function (a logical id of template.yaml, such as McpFunction).
func ReadEnv(path, function string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("samlocal: %w", err)
	}
	var file map[string]map[string]string
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("samlocal: %s: want {\"Function\": {\"NAME\": \"value\"}}: %w", path, err)
	}
	env, ok := file[function]
	if !ok {
		return nil, fmt.Errorf("samlocal: %s has no section for %s (it has %s)", path, function, strings.Join(slices.Sorted(maps.Keys(file)), ", "))
	}
	return env, nil
}

// SAMDefaults returns the variables `sam local` sets in the container by
// itself when the host has no AWS configuration: a region, placeholder
// credentials, an account id and the function's name. A process run
// under the bare emulator needs them to behave as it does under SAM.
func SAMDefaults(function string) map[string]string {
	return map[string]string{
		"AWS_SAM_LOCAL":            "true",
		"AWS_REGION":               "us-east-1",
		"AWS_DEFAULT_REGION":       "us-east-1",
		"AWS_ACCESS_KEY_ID":        "defaultkey",
		"AWS_SECRET_ACCESS_KEY":    "defaultsecret",
		"AWS_ACCOUNT_ID":           "123456789012",
		"AWS_LAMBDA_FUNCTION_NAME": function,
	}
}

// Environ turns variables into KEY=VALUE entries, sorted (for a stable
// command line and log).
func Environ(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// Endpoint is a parsed endpoint variable.
type Endpoint struct {
	URL  *url.URL
	Host string // as written: 127.0.0.1, localhost or host.docker.internal
	Port int
}

// ParseEndpoint reads the endpoint variable name from env: an http URL
// with an explicit port and no path.
func ParseEndpoint(env map[string]string, name string) (Endpoint, error) {
	v := env[name]
	if v == "" {
		return Endpoint{}, fmt.Errorf("samlocal: %s is not set", name)
	}
	u, err := url.Parse(v)
	if err != nil {
		return Endpoint{}, fmt.Errorf("samlocal: %s=%q: %w", name, v, err)
	}
	if u.Scheme != "http" || u.Port() == "" || strings.Trim(u.Path, "/") != "" {
		return Endpoint{}, fmt.Errorf("samlocal: %s=%q: want http://HOST:PORT", name, v)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil || port <= 0 || port > 65535 {
		return Endpoint{}, fmt.Errorf("samlocal: %s=%q: bad port", name, v)
	}
	return Endpoint{URL: u, Host: u.Hostname(), Port: port}, nil
}

// WithEndpoint returns a copy of env whose endpoint variable name points
// at addr (host:port) instead, keeping the scheme: how a test moves the
// file's fixed ports to the ones it chose at run time.
func WithEndpoint(env map[string]string, name, addr string) (map[string]string, error) {
	e, err := ParseEndpoint(env, name)
	if err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("samlocal: %q: %w", addr, err)
	}
	u := *e.URL
	u.Host = addr
	out := maps.Clone(env)
	out[name] = u.String()
	return out, nil
}

// KeyARN is the parts of a KMS key ARN that local-kms must be started
// with for the ARN to name its key.
type KeyARN struct {
	Region, Account, KeyID string
}

// ParseKeyARN reads arn:aws:kms:REGION:ACCOUNT:key/ID.
func ParseKeyARN(arn string) (KeyARN, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "kms" {
		return KeyARN{}, fmt.Errorf("samlocal: %q is not a KMS key ARN", arn)
	}
	id, ok := strings.CutPrefix(parts[5], "key/")
	if !ok || id == "" || parts[3] == "" || parts[4] == "" {
		return KeyARN{}, errors.New("samlocal: want arn:aws:kms:REGION:ACCOUNT:key/ID, got " + arn)
	}
	return KeyARN{Region: parts[3], Account: parts[4], KeyID: id}, nil
}
