module github.com/serverless-mcp/mcp-lambda/deploy

go 1.26

require (
	github.com/awslabs/goformation/v7 v7.14.9
	github.com/serverless-mcp/mcp-lambda v0.0.0-00010101000000-000000000000
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/go-json-experiment/json v1.27.2 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
)

// The tests compare the template with the function's own values
// (pkg/stateless's CORS lists): the module in this working tree.
replace github.com/serverless-mcp/mcp-lambda => ../
