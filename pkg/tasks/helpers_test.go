package tasks_test

// The types of the extension's tests; their requests and answers are
// package wire's (internal/testenv/wire).

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}
type echoOut struct {
	Text string `json:"text"`
}
