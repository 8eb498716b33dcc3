// Package abuse runs the function, as Lambda runs it and as a local
// server, against honest callers and a hostile one, and checks that the
// hostile one pays for its own behaviour alone (docs/abuse.md): the
// hostile caller floods calls, starts tasks past its quota, hangs up
// mid-call, fills the memory task store and floods anonymously from one
// address with a forged X-Forwarded-For, while honest callers, each under
// half its quotas, must never be refused. A counting proxy in front of
// DynamoDB Local knows each table request by the request that made it,
// so a refusal that wrote is seen; the function's own request lines show
// breaker openings and fault lines. It is a test tool, not part of the
// deployed product.
package abuse
