package endpoint

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate/awskms"
)

// The variables State reads.
const (
	EnvStateKMSKey = "MCP_STATE_KMS_KEY"
	EnvStateKey    = "MCP_STATE_KEY"
	EnvStateTTL    = "MCP_STATE_TTL"
)

// DefaultStateTTL is how long a sealed state stays valid by default.
const DefaultStateTTL = 10 * time.Minute

// State is how multi-round-trip request state is sealed. Every function
// of this repository reads it the same way (one loader, one validation,
// one sealer constructor), so that they cannot drift: the conformance
// fixture once accepted a state key of any length that the demo refused.
type State struct {
	// KMSKey roots sealing in AWS KMS (MCP_STATE_KMS_KEY): data keys it
	// generates seal each state. template.yaml sets it.
	KMSKey string
	// Key, if set, is a fixed 32-byte key (MCP_STATE_KEY, standard
	// base64), so that several local processes open each other's states.
	Key []byte
	// TTL is how long a state stays valid (MCP_STATE_TTL).
	TTL time.Duration
}

// LoadState reads State through getenv (os.Getenv, or a map in tests).
func LoadState(getenv func(string) string) (State, error) {
	s := State{TTL: DefaultStateTTL, KMSKey: strings.TrimSpace(getenv(EnvStateKMSKey))}
	if v := getenv(EnvStateKey); v != "" {
		k, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(k) != 32 {
			return State{}, fmt.Errorf("%s must be 32 bytes in standard base64 (for example from `openssl rand -base64 32`)", EnvStateKey)
		}
		s.Key = k
	}
	if v := getenv(EnvStateTTL); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > 24*time.Hour {
			return State{}, fmt.Errorf("%s=%q: want a Go duration between 1s and 24h, such as 10m", EnvStateTTL, v)
		}
		s.TTL = d
	}
	if s.KMSKey != "" && s.Key != nil {
		return State{}, fmt.Errorf("set one of %s and %s, not both", EnvStateKMSKey, EnvStateKey)
	}
	return s, nil
}

// Sealer returns the sealer s configures: rooted in KMS when KMSKey is
// set, through kms (called once, then only when a data key is needed:
// pass a client made on first use to keep it off the cold start); else the
// fixed Key; else a random per-process key. audience, when set, binds
// every state to it (a fixed endpoint); unset, states are bound per
// request to the endpoint each was sent to. function names the caller in
// the KMS encryption context.
func (s State) Sealer(kms func() awskms.API, audience, function string) (reqstate.Sealer, error) {
	opts := reqstate.LocalOptions{TTL: s.TTL, Audience: audience}
	switch {
	case s.KMSKey != "":
		return reqstate.NewKMS(awskms.New(kms()), reqstate.KMSOptions{LocalOptions: opts, KeyID: s.KMSKey, Function: function})
	case s.Key != nil:
		return reqstate.NewLocalKey(s.Key, &opts)
	}
	return reqstate.NewLocal(nil, &opts), nil
}
