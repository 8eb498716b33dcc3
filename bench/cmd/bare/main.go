// Command bare is the cold-start baseline: an aws-lambda-go function that
// answers every invocation with the same HTTP API 2.0 response, parsing
// nothing. What any MCP server's binary costs beyond it is that server's
// own.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

// response is a fixed HTTP API 2.0 response payload.
var response = []byte(`{"statusCode":200,"headers":{"Content-Type":"application/json"},"body":"{}","isBase64Encoded":false}`)

// handler implements lambda.Handler on raw payloads, so that not even the
// reflection-based handler wrapper runs.
type handler struct{}

func (handler) Invoke(context.Context, []byte) ([]byte, error) { return response, nil }

func main() {
	lambda.Start(handler{})
}
