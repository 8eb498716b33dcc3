module github.com/serverless-mcp/mcp-lambda

go 1.26

require (
	github.com/aws/aws-lambda-go v1.55.1 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
)
