package dynamolocal

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// Main is the TestMain of a test binary whose tests use DynamoDB Local:
// it starts the server with tables, sets *server, runs the tests, stops
// the server and exits with the tests' status (1 when it cannot start).
func Main(m *testing.M, server **Server, tables ...Table) {
	s, err := StartWithTables(context.Background(), tables...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*server = s
	code := m.Run()
	s.Stop()
	os.Exit(code)
}
