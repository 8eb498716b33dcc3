// Command gosdk is the cold-start subject for the official Go SDK: its
// stateless, JSON-response handler (echo and add) behind the minimal
// adapter bench/impl/lambdahttp, the one a user of the SDK would write.
// It links this peer alone.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/serverless-mcp/mcp-lambda/bench/impl/gosdk"
	"github.com/serverless-mcp/mcp-lambda/bench/impl/lambdahttp"
)

func main() {
	lambda.Start(lambdahttp.New(gosdk.New()))
}
