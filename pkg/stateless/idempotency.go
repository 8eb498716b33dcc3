package stateless

import (
	"context"
	"encoding/json"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Idempotency makes side-effecting tool calls exactly-once; package claims
// implements it over DynamoDB or memory. The server consults it for every
// tools/call of a tool that is not read-only and carries an idempotency
// key — params.idempotencyKey, the Idempotency-Key header, or, for a tool
// with IdempotentByArguments, a digest of its arguments — after the
// arguments were validated and the request state opened, before the
// handler runs.
type Idempotency interface {
	// Begin claims the call. It returns either a result stored by an
	// earlier call with the same key, to replay; or a ticket to finish
	// once the handler has answered; or a refusal (in progress, conflict,
	// store unavailable), in which case the handler must not run.
	Begin(ctx context.Context, c *IdempotentCall) (replay json.RawMessage, t Ticket, refusal *mcperr.Error)
}

// IdempotentCall describes a call to be claimed.
type IdempotentCall struct {
	Principal string
	Tool      string
	// Key is the client's idempotency key, or "" when the tool is
	// deduplicated by its arguments.
	Key string
	// Arguments are the call's arguments, as sent.
	Arguments json.RawMessage
}

// Ticket finishes a claimed call.
type Ticket interface {
	// Complete stores result, the JSON result object the client was
	// sent, for replay.
	Complete(ctx context.Context, result []byte) error
	// Release gives the claim up: the handler produced no result (it
	// failed, panicked, or asked for input), so a retry may run it.
	Release(ctx context.Context) error
}

// MetaReplay is the result _meta key that marks a replayed result: the
// tool did not run again, and this is the result of the call that did.
const MetaReplay = "io.github.serverless-mcp/replay"

// MetaIdempotency is the key, in server capabilities' extensions and in a
// tool's _meta, that advertises idempotent calls.
const MetaIdempotency = "io.github.serverless-mcp/idempotency"

// markReplay adds MetaReplay to a stored result object.
func markReplay(result json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(result, &obj); err != nil {
		return nil, err
	}
	meta := map[string]json.RawMessage{}
	if m, ok := obj["_meta"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, err
		}
	}
	meta[MetaReplay] = json.RawMessage("true")
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	obj["_meta"] = b
	return json.Marshal(obj)
}
