package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/localkms"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/samlocal"
)

// The function's section of the env-vars file the fleet is configured
// from, as sam local would configure it.
const envFunction = "McpFunction"

// functionTimeout is the fleet's function timeout (seconds), and
// requestTimeout the template's MCP_REQUEST_TIMEOUT: the deadline of a
// gateway request, which the function's claim leases and answers follow.
// The template's timeout is 900 s, a task worker's; a worker's lease is
// its invocation's deadline, so a worker killed in a run of a few
// minutes would hold its task past the run's end. 30 s leaves a gateway
// request its 28 s and lets a killed worker's task be taken again within
// the run.
const (
	functionTimeout = "30"
	requestTimeout  = "28s"
)

// streamEvents is the fleet's MCP_STREAM_EVENTS: the streaming door's
// requests come as a function URL's events (HeaderDoor).
const streamEvents = "function-url"

// duplicateShare is the share of the function's asynchronous invocations
// of itself (task workers) delivered twice, as Lambda may deliver them.
const duplicateShare = 0.25

// ClusterOptions configure StartCluster.
type ClusterOptions struct {
	// RIE and Bootstrap are the emulator and the function binary.
	RIE, Bootstrap string
	// EnvFile and Seed are deploy/sam-local-env.json and
	// deploy/local-kms-seed.yaml: the fleet runs with the file's
	// environment, its endpoints moved to this run's servers.
	EnvFile, Seed string
	// Instances is how many function instances serve (at least 1).
	Instances int
	// Dir holds the run's data: DynamoDB Local's database and local-kms's
	// keys (so that both survive a restart). LogDir holds each instance's
	// output, one file per instance and generation (i2.g3.log).
	Dir, LogDir string
	// Seed of the random choices (faults, kills).
	RandSeed uint64
	// ExtraEnv is added to every instance's environment.
	ExtraEnv map[string]string
}

// Cluster is the running fleet: DynamoDB Local (on disk), local-kms (its
// keys on disk), the fault proxy in front of DynamoDB, the instances and
// their front.
type Cluster struct {
	DynamoDB *dynamolocal.Server
	KMS      *localkms.Server
	Proxy    *Proxy
	Pool     *Pool
	// Invoke is the Lambda Invoke API's stand-in that the function's
	// asynchronous invocations of itself reach: it runs each on an
	// instance of the pool (Pool.InvokeWorker), some twice.
	Invoke *rie.InvokeAPI
	// Front is the front's URL of the MCP endpoint (http://127.0.0.1:port/mcp).
	Front  string
	Table  string
	KeyARN string

	front  *http.Server
	invoke *http.Server
	logDir string
	logMu  sync.Mutex
	logs   []string   // every instance log file, in start order
	files  []*os.File // the servers' log files
	emuMu  sync.Mutex
	emus   map[int]*rie.Emulator // by slot: the current generation
}

// StartCluster starts everything and returns when the front answers.
func StartCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	if o.Instances < 1 {
		return nil, errors.New("chaos: at least one instance")
	}
	fileEnv, err := samlocal.ReadEnv(o.EnvFile, envFunction)
	if err != nil {
		return nil, err
	}
	table := fileEnv[samlocal.EnvClaimsTable]
	keyARN := fileEnv[samlocal.EnvStateKMSKey]
	arn, err := samlocal.ParseKeyARN(keyARN)
	if err != nil {
		return nil, fmt.Errorf("chaos: %s: %w", samlocal.EnvStateKMSKey, err)
	}
	dbDir, kmsDir := filepath.Join(o.Dir, "dynamodb"), filepath.Join(o.Dir, "kms")
	for _, d := range []string{dbDir, kmsDir, o.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
	}
	c := &Cluster{Table: table, KeyARN: keyARN, logDir: o.LogDir, emus: map[int]*rie.Emulator{}}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	ddbLog, err := c.logFile("dynamodb.log")
	if err != nil {
		return nil, err
	}
	kmsLog, err := c.logFile("kms.log")
	if err != nil {
		return nil, err
	}
	if c.DynamoDB, err = dynamolocal.StartWith(ctx, dynamolocal.Options{SharedDB: true, DBPath: dbDir, Output: ddbLog}); err != nil {
		return nil, err
	}
	if c.KMS, err = localkms.StartWith(ctx, localkms.Options{SeedPath: o.Seed, Region: arn.Region, Account: arn.Account, DataDir: kmsDir, Output: kmsLog}); err != nil {
		return nil, err
	}
	// The table as template.yaml creates it: pk and sk, TTL on
	// expires_at (the function's notes and claims both need the sort key).
	if err := dynamolocal.CreateTable(ctx, c.DynamoDB.Client(), table); err != nil {
		return nil, fmt.Errorf("chaos: creating the table %s: %w", table, err)
	}
	if _, err := c.KMS.Client().DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String(keyARN)}); err != nil {
		return nil, fmt.Errorf("chaos: the seed %s does not hold %s: %w", o.Seed, keyARN, err)
	}
	c.Proxy = NewProxy(c.DynamoDB.Endpoint, o.RandSeed)
	env := samlocal.SAMDefaults(envFunction)
	maps.Copy(env, fileEnv)
	env["AWS_LAMBDA_FUNCTION_TIMEOUT"] = functionTimeout
	env["MCP_REQUEST_TIMEOUT"] = requestTimeout
	env["MCP_STREAM_EVENTS"] = streamEvents
	env["MCP_LISTEN_MAX_DURATION"] = ListenMaxDuration.String()
	env["MCP_LISTEN_POLL"] = listenPoll.String()
	// The function's Lambda client reaches the Invoke API's stand-in.
	invokeLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: invoke API: %w", err)
	}
	env["AWS_ENDPOINT_URL_LAMBDA"] = "http://" + invokeLn.Addr().String()
	maps.Copy(env, o.ExtraEnv)
	if env, err = samlocal.WithEndpoint(env, samlocal.EnvKMSEndpoint, strings.TrimPrefix(c.KMS.Endpoint, "http://")); err != nil {
		return nil, err
	}
	// One proxy listener per slot, so that a fault rule can name the
	// instance that made a request (and kill it).
	proxyAddrs := make([]string, o.Instances)
	for i := range proxyAddrs {
		if proxyAddrs[i], err = c.Proxy.Listen(fmt.Sprintf("i%d", i)); err != nil {
			return nil, err
		}
	}
	start := func(ctx context.Context, slot, gen int) (Instance, error) {
		e, err := samlocal.WithEndpoint(env, samlocal.EnvDynamoDBEndpoint, proxyAddrs[slot])
		if err != nil {
			return nil, err
		}
		return c.startInstance(ctx, o, samlocal.Environ(e), slot, gen)
	}
	if c.Pool, err = NewPool(ctx, o.Instances, start, o.RandSeed); err != nil {
		invokeLn.Close()
		return nil, err
	}
	dup := rand.New(rand.NewPCG(o.RandSeed, 11))
	var dupMu sync.Mutex
	// Lambda retries a failed asynchronous invocation twice, a minute
	// and then two later; here 3 s and then 6 s, longer than a
	// DynamoDB Local restart.
	c.Invoke = &rie.InvokeAPI{Invoke: c.Pool.InvokeWorker, Retries: 2, RetryDelay: 3 * time.Second, DuplicateIf: func() bool {
		dupMu.Lock()
		defer dupMu.Unlock()
		return dup.Float64() < duplicateShare
	}}
	c.invoke = &http.Server{Handler: c.Invoke, ReadHeaderTimeout: 10 * time.Second}
	go c.invoke.Serve(invokeLn)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: front: %w", err)
	}
	c.front = &http.Server{Handler: c.Pool, ReadHeaderTimeout: 10 * time.Second}
	go c.front.Serve(l)
	c.Front = "http://" + l.Addr().String() + "/mcp"
	ok = true
	return c, nil
}

// startInstance starts one emulator with the function, its output in a
// log file of its own.
func (c *Cluster) startInstance(ctx context.Context, o ClusterOptions, env []string, slot, gen int) (*rie.Emulator, error) {
	path := filepath.Join(c.logDir, fmt.Sprintf("i%d.g%d.log", slot, gen))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	// The emulator writes to the file directly; the file stays open in
	// the child after this process closes its copy.
	defer f.Close()
	e, err := rie.Start(ctx, rie.Options{RIE: o.RIE, Bootstrap: o.Bootstrap, Env: env, Output: f, OwnGroup: true})
	if err != nil {
		return nil, err
	}
	c.logMu.Lock()
	c.logs = append(c.logs, path)
	c.logMu.Unlock()
	c.emuMu.Lock()
	c.emus[slot] = e
	c.emuMu.Unlock()
	return e, nil
}

// logFile creates a log file of the run's servers, closed by Stop.
func (c *Cluster) logFile(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(c.logDir, name))
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	c.files = append(c.files, f)
	return f, nil
}

// Emulator returns the current emulator of a slot.
func (c *Cluster) Emulator(slot int) *rie.Emulator {
	c.emuMu.Lock()
	defer c.emuMu.Unlock()
	return c.emus[slot]
}

// Logs are the instances' log files, in start order.
func (c *Cluster) Logs() []string {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	return append([]string(nil), c.logs...)
}

// RestartDynamoDB stops DynamoDB Local and starts it again on the same
// port with the same database directory.
func (c *Cluster) RestartDynamoDB(ctx context.Context) error {
	return c.DynamoDB.Restart(ctx)
}

// HaltKMS stops local-kms, keeping its keys, until StartKMS.
func (c *Cluster) HaltKMS() { c.KMS.Halt() }

// StartKMS starts local-kms again, with its keys, on the same port.
func (c *Cluster) StartKMS(ctx context.Context) error { return c.KMS.Restart(ctx) }

// Stop ends everything.
func (c *Cluster) Stop() {
	if c.front != nil {
		c.front.Close()
	}
	if c.invoke != nil {
		c.invoke.Close()
	}
	if c.Pool != nil {
		c.Pool.Close()
	}
	if c.Proxy != nil {
		c.Proxy.Close()
	}
	if c.KMS != nil {
		c.KMS.Stop()
	}
	if c.DynamoDB != nil {
		c.DynamoDB.Stop()
	}
	for _, f := range c.files {
		f.Close()
	}
}
