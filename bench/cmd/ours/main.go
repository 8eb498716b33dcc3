// Command ours is the cold-start subject for this project: the bench
// server (echo and add) on our production Lambda path, pkg/apigw.Handler,
// with no net/http in between. It links our server and nothing of the
// peers.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/serverless-mcp/mcp-lambda/bench/impl/ours"
	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
)

func main() {
	lambda.Start(&apigw.Handler{Server: ours.NewServer()})
}
