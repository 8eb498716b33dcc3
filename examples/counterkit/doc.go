// Package counterkit tests examples/counter's deploy kit, as a module of
// one's own has it: the files cmd/mcp-sam wrote (template.yaml and mcp.mk,
// checked against what it writes now, and the template against the
// library's), what sam build's targets build, the sample events made by
// make event and answered through make invoke under the Lambda runtime
// emulator, and make smoke against the counter served locally. It has
// tests only.
package counterkit
