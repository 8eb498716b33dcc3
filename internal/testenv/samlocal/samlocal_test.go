package samlocal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadEnvTheCommittedFile(t *testing.T) {
	env, err := ReadEnv("../../../deploy/sam-local-env.json", "McpFunction")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{EnvDynamoDBEndpoint, EnvKMSEndpoint} {
		e, err := ParseEndpoint(env, name)
		if err != nil {
			t.Fatal(err)
		}
		if e.Host != "127.0.0.1" {
			t.Errorf("%s: host %s; the file's default is 127.0.0.1 (docs/local.md)", name, e.Host)
		}
	}
	arn, err := ParseKeyARN(env[EnvStateKMSKey])
	if err != nil {
		t.Fatal(err)
	}
	// What sam local passes when the host has no AWS configuration.
	d := SAMDefaults("McpFunction")
	if arn.Region != d["AWS_REGION"] || arn.Account != d["AWS_ACCOUNT_ID"] {
		t.Errorf("key %s is not in sam local's region and account (%s, %s)", env[EnvStateKMSKey], d["AWS_REGION"], d["AWS_ACCOUNT_ID"])
	}
	if _, err := ReadEnv("../../../deploy/sam-local-env.json", "NoSuchFunction"); err == nil || !strings.Contains(err.Error(), "McpFunction") {
		t.Errorf("a missing section: %v", err)
	}
}

func TestReadEnvErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"McpFunction": {"PORT": 8000}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadEnv(bad, "McpFunction"); err == nil {
		t.Error("a number value was accepted (sam local wants strings)")
	}
	if _, err := ReadEnv(filepath.Join(dir, "missing.json"), "McpFunction"); err == nil {
		t.Error("a missing file was accepted")
	}
}

func TestEndpoints(t *testing.T) {
	env := map[string]string{EnvDynamoDBEndpoint: "http://host.docker.internal:8000", "OTHER": "x"}
	e, err := ParseEndpoint(env, EnvDynamoDBEndpoint)
	if err != nil || e.Host != "host.docker.internal" || e.Port != 8000 {
		t.Fatalf("%+v %v", e, err)
	}
	moved, err := WithEndpoint(env, EnvDynamoDBEndpoint, "127.0.0.1:41234")
	if err != nil {
		t.Fatal(err)
	}
	if moved[EnvDynamoDBEndpoint] != "http://127.0.0.1:41234" || moved["OTHER"] != "x" || env[EnvDynamoDBEndpoint] != "http://host.docker.internal:8000" {
		t.Errorf("moved %v, original %v", moved, env)
	}
	for _, v := range []string{"", "https://127.0.0.1:8000", "http://127.0.0.1", "http://127.0.0.1:8000/path", "http://127.0.0.1:0", "127.0.0.1:8000"} {
		if _, err := ParseEndpoint(map[string]string{"E": v}, "E"); err == nil {
			t.Errorf("%q was accepted", v)
		}
	}
}

func TestParseKeyARN(t *testing.T) {
	k, err := ParseKeyARN("arn:aws:kms:eu-west-1:111122223333:key/abc")
	if err != nil || k != (KeyARN{Region: "eu-west-1", Account: "111122223333", KeyID: "abc"}) {
		t.Fatalf("%+v %v", k, err)
	}
	for _, v := range []string{"alias/x", "arn:aws:kms:eu-west-1:111122223333:alias/x", "arn:aws:s3:::bucket", "arn:aws:kms:::key/abc"} {
		if _, err := ParseKeyARN(v); err == nil {
			t.Errorf("%q was accepted", v)
		}
	}
}

func TestEnviron(t *testing.T) {
	got := strings.Join(Environ(map[string]string{"B": "2", "A": "1"}), " ")
	if got != "A=1 B=2" {
		t.Errorf("got %s", got)
	}
}
