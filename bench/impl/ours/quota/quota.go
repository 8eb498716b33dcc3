// Package quota is the bench server behind the endpoint's default quotas,
// as they run without a table (package ratelimit's memory counter and
// slots): the ours-quota implementation. It is a package apart from
// bench/impl/ours so that the cold-start subject, which links that one,
// links no quota and no AWS client.
package quota

import (
	"math"
	"net/http"
	"time"

	"github.com/serverless-mcp/mcp-lambda/bench/impl/ours"
	"github.com/serverless-mcp/mcp-lambda/pkg/ratelimit"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// NewServer is the bench server behind the calls quota on every call and
// the streams quota on every call served through net/http, which
// streams. Its calls limit is the largest there is, so that a
// benchmark's flood from one caller measures admitted calls, which cost
// what they cost under 600 a minute.
func NewServer() *stateless.Server {
	return ours.NewServerWith(
		(&ratelimit.StreamLimit{Slots: &ratelimit.MemorySlots{}, Max: 10}).Interceptor(),
		(&ratelimit.Limiter{Counter: &ratelimit.Memory{}, Limit: math.MaxInt64, Window: time.Minute}).Interceptor(),
	)
}

// New returns the server as an http.Handler.
func New() http.Handler { return NewServer() }
