// Command invoke runs a function binary under the Lambda Runtime Interface
// Emulator on loopback, sends it one event, prints the response payload
// (the API Gateway response object) and stops the emulator: a local
// invoke with no Docker and no AWS account. `make invoke` runs it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/rie"
)

func main() {
	riePath := flag.String("rie", ".tools/bin/aws-lambda-rie", "path of aws-lambda-rie")
	bootstrap := flag.String("bootstrap", "build/amd64/bootstrap", "path of the function binary")
	event := flag.String("event", "events/discover.json", "event payload file")
	flag.Parse()
	if err := invoke(*riePath, *bootstrap, *event); err != nil {
		fmt.Fprintln(os.Stderr, "invoke:", err)
		os.Exit(1)
	}
}

func invoke(riePath, bootstrap, event string) error {
	payload, err := os.ReadFile(event)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var logs bytes.Buffer
	e, err := rie.Start(ctx, rie.Options{RIE: riePath, Bootstrap: bootstrap, Output: &logs})
	if err != nil {
		return err
	}
	defer e.Stop()
	out, err := e.Invoke(ctx, payload)
	if err != nil {
		os.Stderr.Write(logs.Bytes())
		return err
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") != nil {
		pretty.Write(out)
	}
	fmt.Println(pretty.String())
	return nil
}
