// Package tools holds what every implementation under test shares: the
// echo and add tools' input and output types, their descriptions and the
// server's name. It imports nothing, so that linking one implementation
// alone (bench/cmd/...) links none of the others.
package tools

// Server identity, the same for every implementation.
const (
	ServerName    = "bench-server"
	ServerVersion = "1.0.0"
)

// Tool descriptions, the same for every implementation.
const (
	EchoDesc = "Returns its text."
	AddDesc  = "Adds two integers."
)

// EchoIn is the echo tool's input.
type EchoIn struct {
	Text string `json:"text"`
}

// EchoOut is the echo tool's structured output.
type EchoOut struct {
	Text string `json:"text"`
}

// AddIn is the add tool's input.
type AddIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

// AddOut is the add tool's structured output.
type AddOut struct {
	Sum int `json:"sum"`
}
