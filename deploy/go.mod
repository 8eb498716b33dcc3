module github.com/serverless-mcp/mcp-lambda/deploy

go 1.26

require (
	github.com/awslabs/goformation/v7 v7.14.9
	gopkg.in/yaml.v3 v3.0.1
)
