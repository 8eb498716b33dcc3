// Command bare-jsonschema is bench/cmd/bare linking github.com/google/jsonschema-go/jsonschema
// too, using nothing of it: what that package's initialization alone adds
// to a cold start (the core links it).
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
	_ "github.com/google/jsonschema-go/jsonschema"
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
