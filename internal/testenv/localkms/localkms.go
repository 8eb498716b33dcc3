// Package localkms starts local-kms (installed by `make tools`), an
// implementation of the AWS KMS API, for integration tests, and gives a
// client for it. Like DynamoDB Local it listens on every interface, so it
// only starts in a loopback-only network namespace.
package localkms

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
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/loopback"
)

// Server is a running local-kms.
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
	bin  string
	env  []string
	port int
	out  io.Writer
	// tempDir is the data directory Start made, removed by Stop; empty
	// when the caller gave Options.DataDir.
	tempDir string
}

// binary finds local-kms: $MCP_LOCAL_KMS, or .tools/bin of the repository
// that contains the working directory.
func binary() (string, error) {
	if p := os.Getenv("MCP_LOCAL_KMS"); p != "" {
		return p, nil
	}
	wd, _ := os.Getwd()
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".tools/bin/local-kms")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("localkms: local-kms is not installed; run make tools")
		}
	}
}

// Options configure StartWith. The zero value is what tests want: a free
// port, no keys, region us-east-1, account 111122223333.
type Options struct {
	// Port to listen on; 0 picks a free one.
	Port int
	// SeedPath, if set, is a local-kms seed file (keys with fixed ids and
	// backing keys, aliases) loaded at start.
	SeedPath string
	// Region and Account make the keys' ARNs: a client that names a key by
	// ARN must use the same.
	Region, Account string
	// Exposed accepts that local-kms listens on every interface of a
	// machine that has more than loopback: a developer's own session
	// (make local-aws) only, never tests.
	Exposed bool
	// DataDir, if set, is local-kms's data directory, kept by Stop, so
	// that keys survive Restart (a chaos run stops local-kms for a while
	// and starts it again). It must exist; the caller removes it. A seed
	// file only adds keys the directory does not hold yet. Unset: a
	// fresh temporary directory, removed by Stop.
	DataDir string
	// Output, if set, receives local-kms's log (a run's log file);
	// otherwise it goes to standard error.
	Output io.Writer
}

// Start starts local-kms on a free port with an empty data directory.
func Start(ctx context.Context) (*Server, error) { return StartWith(ctx, Options{}) }

// StartWith starts local-kms as o says, with an empty data directory (so
// a seed file always applies: local-kms does not overwrite stored keys)
// unless o.DataDir names one.
func StartWith(ctx context.Context, o Options) (*Server, error) {
	if !o.Exposed && !loopback.Only() {
		return nil, errors.New("localkms: local-kms listens on every interface; run it in a loopback-only network namespace (make integration)")
	}
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	port := o.Port
	if port == 0 {
		if port, err = loopback.FreePort(); err != nil {
			return nil, err
		}
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.Account == "" {
		o.Account = "111122223333"
	}
	env := []string{"PORT=" + strconv.Itoa(port), "KMS_REGION=" + o.Region, "KMS_ACCOUNT_ID=" + o.Account}
	if o.SeedPath != "" {
		seed, err := filepath.Abs(o.SeedPath)
		if err != nil {
			return nil, err
		}
		// local-kms skips a missing seed file with a log line; say so here.
		if _, err := os.Stat(seed); err != nil {
			return nil, fmt.Errorf("localkms: seed file: %w", err)
		}
		env = append(env, "KMS_SEED_PATH="+seed)
	}
	r := &running{bin: bin, port: port, out: o.Output}
	if r.out == nil {
		r.out = os.Stderr
	}
	dir := o.DataDir
	if dir != "" {
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, fmt.Errorf("localkms: DataDir: %w", err)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("localkms: DataDir %s is not a directory", dir)
		}
	} else {
		if dir, err = os.MkdirTemp("", "localkms"); err != nil {
			return nil, err
		}
		r.tempDir = dir
	}
	r.env = append(append(os.Environ(), env...), "KMS_DATA_PATH="+dir)
	if err := r.start(ctx); err != nil {
		if r.tempDir != "" {
			os.RemoveAll(r.tempDir)
		}
		return nil, err
	}
	return &Server{Endpoint: "http://" + loopback.Addr(port), run: r}, nil
}

// start runs the process on r's port; r.mu is held or r is not shared
// yet.
func (r *running) start(ctx context.Context) error {
	cmd := exec.Command(r.bin)
	cmd.Env = r.env
	cmd.Stdout, cmd.Stderr = r.out, r.out
	proc, err := loopback.Start(ctx, cmd, loopback.Addr(r.port), 10*time.Second)
	if err != nil {
		return fmt.Errorf("localkms: port %d: %w", r.port, err)
	}
	r.proc = proc
	return nil
}

// Halt stops local-kms and keeps its data directory, so that Restart
// can bring it back with its keys (with Options.DataDir; a temporary
// directory is kept too, until Stop). Meanwhile the endpoint refuses
// connections, as an unreachable key service does.
func (s *Server) Halt() {
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

// Restart stops local-kms if it runs (see Halt) and starts it again on
// the same port, with the same options and data directory.
func (s *Server) Restart(ctx context.Context) error {
	r := s.run
	if r == nil {
		return errors.New("localkms: a Server made by hand cannot restart")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil {
		r.proc.Stop()
		r.proc = nil
	}
	return r.start(ctx)
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

// StartWithKey starts local-kms and creates a symmetric key in it,
// returning its ARN: what every test that seals state needs.
func StartWithKey(ctx context.Context) (*Server, string, error) {
	s, err := Start(ctx)
	if err != nil {
		return nil, "", err
	}
	key, err := CreateKey(ctx, s.Client())
	if err != nil {
		s.Stop()
		return nil, "", fmt.Errorf("localkms: creating a key: %w", err)
	}
	return s, key, nil
}

// Stop ends local-kms. A Server made by hand has nothing to stop.
func (s *Server) Stop() {
	if s.run == nil {
		return
	}
	s.Halt()
	if s.run.tempDir != "" {
		os.RemoveAll(s.run.tempDir)
	}
}

// Client returns a KMS client for the server; opts are applied last.
func (s *Server) Client(opts ...func(*kms.Options)) *kms.Client {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	return kms.NewFromConfig(cfg, append([]func(*kms.Options){func(o *kms.Options) {
		o.BaseEndpoint = aws.String(s.Endpoint)
	}}, opts...)...)
}

// CreateKey creates a symmetric encryption key and returns its ARN.
func CreateKey(ctx context.Context, c *kms.Client) (string, error) {
	out, err := c.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("request state test key")})
	if err != nil {
		return "", err
	}
	return *out.KeyMetadata.Arn, nil
}
