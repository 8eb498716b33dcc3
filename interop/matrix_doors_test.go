//go:build unix

package interop

// The client matrix's doors, as the template deploys them (and the local
// server), shared by its unit cells (matrix_test.go) and the one the
// integration build verifies (matrix_tasks_integration_test.go).
const (
	doorLocal     = "local"     // the endpoint as a local HTTP server
	doorHTTPAPI   = "http-api"  // the buffered HTTP API door: Lambda under the emulator
	doorStreaming = "streaming" // the REST API streaming door: Lambda's response streaming
)

// matrixTasksLambda is the cell TestClientMatrixTasksLambda verifies in
// the integration build: the tasks extension's client through the Lambda
// doors, whose task workers need a shared task store (DynamoDB Local).
var matrixTasksLambda = struct {
	client, feature string
	doors           []string
}{"ext-tasks", "tasks", []string{doorHTTPAPI, doorStreaming}}
