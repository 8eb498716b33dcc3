package stateless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Idempotency makes side-effecting tool calls exactly-once; package claims
// implements it over DynamoDB or memory. The server consults it for every
// tools/call of a tool that is not read-only (or that becomes a task, so
// that a keyed retry finds the task the first call made) and carries an
// idempotency key — params.idempotencyKey, the Idempotency-Key header, or, for a tool
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
	// Lease is how long the handler may run from now: the earlier of the
	// tool's MaxDuration and the request's deadline less the server's
	// DeadlineMargin. The claim must stay in progress at least that long
	// (package claims adds a margin), and should not much longer: a
	// caller that crashed blocks its key until then. Zero: the
	// implementation derives it from ctx's deadline.
	Lease time.Duration
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

// RedemptionJoiner is a Ticket that can spend the call's single-use
// request state in its own completion, atomically (package claims does,
// in one DynamoDB transaction). When JoinRedemption reports true and
// Complete succeeds, the state is spent; when Complete fails, the server
// settles the redemption itself.
type RedemptionJoiner interface {
	JoinRedemption(Redemption) bool
}

// ErrNotCommitted is wrapped in the error of a Ticket's Complete when
// the call's side effect, enlisted in the completion, was not committed
// (or is not known to have been): the tool's result must not reach the
// client, who is told to retry instead. Retried with the same key, the
// call replays the result if the commit did happen after all, and runs
// again if it did not.
var ErrNotCommitted = errors.New("stateless: the call's side effect was not committed")

type ticketKey struct{}

// TicketFrom returns the idempotency Ticket of the tools/call whose
// handler runs under ctx, or nil when the call holds no claim. An
// Idempotency implementation uses it to let a handler join its own writes
// to the claim's completion (claims.Enlist).
func TicketFrom(ctx context.Context) Ticket {
	t, _ := ctx.Value(ticketKey{}).(Ticket)
	return t
}

// MetaReplay is the result _meta key that marks a replayed result: the
// tool did not run again, and this is the result of the call that did.
const MetaReplay = "io.github.serverless-mcp/replay"

// MetaIdempotency is the key, in server capabilities' extensions and in a
// tool's _meta, that advertises idempotent calls.
const MetaIdempotency = "io.github.serverless-mcp/idempotency"

// replayMember is MetaReplay's member as the server writes it.
const replayMember = `"` + MetaReplay + `":true`

// replayForm is the result as a replay answers it, marked with
// MetaReplay: what a claim stores, so that a replay sends it as it is.
func (r encodedResult) replayForm() []byte {
	o := r.obj
	out := make([]byte, 0, len(o)+len(replayMember)+len(`,"_meta":{}`))
	if r.metaAt < 0 {
		// No _meta: add one before the closing brace.
		out = append(out, o[:len(o)-1]...)
		if len(bytes.TrimSpace(o[1:len(o)-1])) > 0 {
			out = append(out, ',')
		}
		out = append(out, `"_meta":{`+replayMember+`}}`...)
		return out
	}
	out = append(out, o[:r.metaAt]...)
	out = append(out, replayMember...)
	if o[r.metaAt] != '}' {
		out = append(out, ',')
	}
	return append(out, o[r.metaAt:]...)
}

// markedReplay returns a stored result marked as a replay: as stored, when
// it was stored in its replay form; else (a record written before the
// replay form was stored) decoded and marked.
func markedReplay(stored json.RawMessage) (json.RawMessage, error) {
	if bytes.Contains(stored, []byte(replayMember)) {
		return stored, nil
	}
	return markReplay(stored)
}

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

// MaxIdempotencyKeyBytes is the length limit of an idempotency key, in
// bytes of its UTF-8 form (after decoding the header's base64 form).
const MaxIdempotencyKeyBytes = 255

// Why an idempotency key was refused, sent as data.reason with
// [mcperr.BadIdempotencyKey]. Fixed words: the key itself is never sent
// back.
const (
	keyNotAString      = "not_a_string"     // params.idempotencyKey is null, a number, an object…
	keyEmpty           = "empty"            // "", or a header with nothing in it
	keyTooLong         = "too_long"         // over MaxIdempotencyKeyBytes
	keyNotPrintable    = "not_printable"    // a control, format or non-ASCII space character, or not UTF-8
	keyMalformedHeader = "malformed_header" // a base64 form that does not decode, or a control character
	keyRepeatedHeader  = "repeated_header"  // Idempotency-Key values that differ
	keyMismatch        = "mismatch"         // params.idempotencyKey and the header differ
)

// idempotencyKey reads a tools/call's idempotency key from
// params.idempotencyKey (raw, nil when absent) and the Idempotency-Key
// header. It returns "" when the call carries no key, and a refusal when
// the key is unusable: a key the server cannot read, or two it cannot
// choose between, must not be dropped, for the call would then run
// unclaimed.
//
// A key is 1 to MaxIdempotencyKeyBytes bytes of UTF-8, every character of
// it printable (a letter, mark, number, punctuation, symbol or the ASCII
// space). The header carries it in the encoding of the MCP headers: white
// space around it trimmed, or the =?base64?...?= form, padded, of its
// UTF-8 bytes. The header is a single value. Lines repeated with the same
// value are one value; since HTTP allows repeated lines to be joined with
// commas, as API Gateway's HTTP API and function URLs do, a comma in the
// plain form separates values too, and a key with a comma travels in the
// base64 form or in params. When params and the header both carry a key
// they must be equal.
func idempotencyKey(raw json.RawMessage, hdr http.Header) (string, *mcperr.Error) {
	var key string
	if raw != nil {
		s, ok := jsonString(raw)
		if !ok {
			return "", mcperr.NewBadIdempotencyKey(keyNotAString)
		}
		if !utf8.Valid(raw) {
			// The decoder would have replaced the bytes with U+FFFD.
			return "", mcperr.NewBadIdempotencyKey(keyNotPrintable)
		}
		if r := checkKey(s); r != "" {
			return "", mcperr.NewBadIdempotencyKey(r)
		}
		key = s
	}
	lines := hdr.Values(headerIdempotencyKey)
	if len(lines) == 0 {
		return key, nil
	}
	h, r := keyHeader(lines)
	if r == "" {
		r = checkKey(h)
	}
	if r == "" && raw != nil && h != key {
		r = keyMismatch
	}
	if r != "" {
		return "", mcperr.NewBadIdempotencyKey(r)
	}
	return h, nil
}

// keyHeader decodes the Idempotency-Key header's lines into one value, or
// says why it cannot.
func keyHeader(lines []string) (string, string) {
	var key string
	n := 0
	for _, line := range lines {
		for elem := range strings.SplitSeq(line, ",") {
			v, ok := decodeHeaderValue(elem)
			if !ok {
				return "", keyMalformedHeader
			}
			if n > 0 && v != key {
				return "", keyRepeatedHeader
			}
			key, n = v, n+1
		}
	}
	return key, ""
}

// checkKey returns why key is not a usable idempotency key, or "".
func checkKey(key string) string {
	switch {
	case key == "":
		return keyEmpty
	case len(key) > MaxIdempotencyKeyBytes:
		return keyTooLong
	case !utf8.ValidString(key):
		return keyNotPrintable
	}
	for _, r := range key {
		if !unicode.IsPrint(r) {
			return keyNotPrintable
		}
	}
	return ""
}
