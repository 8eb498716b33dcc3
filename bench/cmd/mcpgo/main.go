// Command mcpgo is the cold-start subject for mcp-go: its stateless
// streamable HTTP server (echo and add) behind the minimal adapter
// bench/impl/lambdahttp, the one a user of mcp-go would write. It links
// this peer alone.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/serverless-mcp/mcp-lambda/bench/impl/lambdahttp"
	"github.com/serverless-mcp/mcp-lambda/bench/impl/mcpgo"
)

func main() {
	lambda.Start(lambdahttp.New(mcpgo.New()))
}
