package endpoint

import (
	"context"
	"encoding/json"

	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// secretsManagerStandIn answers GetSecretValue as Secrets Manager
// documents it (Secrets Manager API Reference, "GetSecretValue"): a JSON
// 1.1 POST whose X-Amz-Target is secretsmanager.GetSecretValue and whose
// body names SecretId; the secret's ARN, Name, SecretString, VersionId and
// VersionStages (AWSCURRENT) in the answer; an unknown secret is a 400
// whose __type is ResourceNotFoundException. It counts the calls and
// checks that each is signed (Signature Version 4).
func secretsManagerStandIn(t *testing.T, secrets map[string]string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" ||
			!strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"__type":"InvalidRequestException","message":"not a signed GetSecretValue"}`))
			return
		}
		var in struct{ SecretId string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"__type":"InvalidParameterException","message":"bad body"}`))
			return
		}
		v, ok := secrets[in.SecretId]
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"__type":"ResourceNotFoundException","message":"Secrets Manager can't find the specified secret."}`))
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"ARN": in.SecretId, "Name": "proxy-client", "SecretString": v,
			"VersionId": "EXAMPLE1-90ab-cdef-fedc-ba987SECRET1", "VersionStages": []string{"AWSCURRENT"}, "CreatedDate": 1.523477145713e9})
	}))
	t.Cleanup(ts.Close)
	return ts, &calls
}

// standInClients are Clients whose calls go to url with fixed
// credentials.
func standInClients(url string) *Clients {
	return &Clients{Configure: func(c *aws.Config) {
		c.BaseEndpoint = aws.String(url)
		c.Region = "us-east-1"
		c.Credentials = credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "")
	}}
}

const secretARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:proxy-client-AbCdEf"

func TestCachedSecret(t *testing.T) {
	ts, calls := secretsManagerStandIn(t, map[string]string{secretARN: "s3cr3t"})
	clients := standInClients(ts.URL)
	ctx := context.Background()
	s := &cachedSecret{aws: clients, id: secretARN}
	for i := range 3 {
		v, err := s.Get(ctx)
		if err != nil || v != "s3cr3t" {
			t.Fatalf("read %d: %q, %v", i, v, err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d GetSecretValue calls for three reads within the cache's lifetime, want 1", n)
	}
	// An unknown secret fails, and is asked for again next time.
	missing := &cachedSecret{aws: clients, id: "arn:aws:secretsmanager:us-east-1:123456789012:secret:nope-XyZ"}
	for range 2 {
		if v, err := missing.Get(ctx); err == nil || v != "" || !strings.Contains(err.Error(), "ResourceNotFoundException") {
			t.Errorf("an unknown secret: %q, %v", v, err)
		}
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d calls, want 3: a failed read is not cached", n)
	}
}

func TestProxyClientSecretConfig(t *testing.T) {
	const iss = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123"
	proxy := []string{EnvAuthIssuer, iss, EnvAuthRegistrationClientID, "client-1", EnvAuthAuthorizationEndpoint, "https://auth.example.com/oauth2/authorize",
		EnvAuthTokenEndpoint, "https://auth.example.com/oauth2/token", EnvAuthProxy, "true"}
	c, err := LoadConfig(env(append(proxy, EnvAuthProxyClientSecret, secretARN)...))
	if err != nil || c.AuthProxy == nil || c.AuthProxy.ClientSecretARN != secretARN {
		t.Fatalf("LoadConfig: %+v, %v", c.AuthProxy, err)
	}
	ts, _ := secretsManagerStandIn(t, map[string]string{secretARN: "s3cr3t"})
	e, err := New(c, Options{Clients: standInClients(ts.URL), Stdout: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Auth == nil || e.Auth.Proxy == nil || e.Auth.Proxy.ClientSecret == nil {
		t.Fatal("the proxy has no client secret")
	}
	if v, err := e.Auth.Proxy.ClientSecret(context.Background()); err != nil || v != "s3cr3t" {
		t.Errorf("ClientSecret: %q, %v", v, err)
	}
	// Without one, a public client.
	c, err = LoadConfig(env(proxy...))
	if err != nil {
		t.Fatal(err)
	}
	if e, err := New(c, Options{Stdout: &strings.Builder{}}); err != nil || e.Auth.Proxy.ClientSecret != nil {
		t.Errorf("without a secret: %v, %v", e, err)
	}
	// A secret without the proxy, or not an ARN or name, is refused.
	for _, bad := range [][]string{
		{EnvAuthIssuer, iss, EnvAuthProxyClientSecret, secretARN},
		append(proxy, EnvAuthProxyClientSecret, "not a name"),
	} {
		if _, err := LoadConfig(env(bad...)); err == nil || !strings.Contains(err.Error(), EnvAuthProxyClientSecret) {
			t.Errorf("%q: %v, want a refusal naming %s", bad, err, EnvAuthProxyClientSecret)
		}
	}

}
