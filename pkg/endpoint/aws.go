package endpoint

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
)

// Clients are the AWS SDK clients of an endpoint, created on first use,
// not at start: a cold start that serves discover, a list or a read-only
// tool pays nothing for them. A tool of your own that calls DynamoDB
// takes its client here, and pays for it only when it is called.
type Clients struct {
	// Configure, if set, adjusts the AWS configuration before the clients
	// are made: tests point them at local emulators with it.
	Configure func(*aws.Config)

	once   sync.Once
	cfg    aws.Config
	err    error
	dynamo *dynamodb.Client
	kms    *kms.Client
	lambda *lambda.Client
	// secrets is made on its first use only: the authorization proxy's
	// client secret is its one use.
	secretsOnce sync.Once
	secrets     *secretsmanager.Client
}

func (a *Clients) load(ctx context.Context) error {
	a.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		a.cfg, a.err = config.LoadDefaultConfig(ctx)
		if a.err != nil {
			a.err = fmt.Errorf("loading the AWS configuration: %w", a.err)
			return
		}
		if a.Configure != nil {
			a.Configure(&a.cfg)
		}
		a.dynamo = dynamodb.NewFromConfig(a.cfg)
		a.kms = kms.NewFromConfig(a.cfg)
		a.lambda = lambda.NewFromConfig(a.cfg)
	})
	return a.err
}

// DynamoDB returns the DynamoDB client, made on first use.
func (a *Clients) DynamoDB(ctx context.Context) (*dynamodb.Client, error) {
	if err := a.load(ctx); err != nil {
		return nil, err
	}
	return a.dynamo, nil
}

// lambdaAPI returns the Lambda client that starts task workers, made on
// first use.
func (a *Clients) lambdaAPI(ctx context.Context) (tasks.LambdaAPI, error) {
	if err := a.load(ctx); err != nil {
		return nil, err
	}
	return a.lambda, nil
}

// secretsManager returns the Secrets Manager client, made on first use.
func (a *Clients) secretsManager(ctx context.Context) (*secretsmanager.Client, error) {
	if err := a.load(ctx); err != nil {
		return nil, err
	}
	a.secretsOnce.Do(func() { a.secrets = secretsmanager.NewFromConfig(a.cfg) })
	return a.secrets, nil
}

// secretTTL is how long a secret read from Secrets Manager is used before
// it is read again: AWS recommends caching secrets in the client (Secrets
// Manager user guide, "Cache secrets"), and a rotated secret reaches the
// function within this.
const secretTTL = 5 * time.Minute

// cachedSecret is a Secrets Manager secret's string, read on first use and
// again once secretTTL has passed; a failed read is not cached, so the
// next request tries again (the proxy fails its token request closed,
// retryably, meanwhile).
type cachedSecret struct {
	aws *Clients
	id  string

	mu      sync.Mutex
	value   string
	fetched time.Time
}

// Get returns the secret's current string.
func (c *cachedSecret) Get(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.value != "" && time.Since(c.fetched) < secretTTL {
		return c.value, nil
	}
	sm, err := c.aws.secretsManager(ctx)
	if err != nil {
		return "", err
	}
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(c.id)})
	if err != nil {
		return "", fmt.Errorf("reading the client secret from Secrets Manager: %w", err)
	}
	if out.SecretString == nil || *out.SecretString == "" {
		return "", errors.New("the client secret in Secrets Manager has no SecretString")
	}
	c.value, c.fetched = *out.SecretString, time.Now()
	return c.value, nil
}

// lazyDynamo is the DynamoDB client of the task store, the rate limit's
// counters, the event log and the tools' items, made on first use.
type lazyDynamo struct{ aws *Clients }

func (l lazyDynamo) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := l.aws.load(ctx); err != nil {
		return nil, err
	}
	return l.aws.dynamo.PutItem(ctx, in, opts...)
}

func (l lazyDynamo) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := l.aws.load(ctx); err != nil {
		return nil, err
	}
	return l.aws.dynamo.UpdateItem(ctx, in, opts...)
}

func (l lazyDynamo) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := l.aws.load(ctx); err != nil {
		return nil, err
	}
	return l.aws.dynamo.GetItem(ctx, in, opts...)
}

func (l lazyDynamo) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if err := l.aws.load(ctx); err != nil {
		return nil, err
	}
	return l.aws.dynamo.Query(ctx, in, opts...)
}

func (l lazyDynamo) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if err := l.aws.load(ctx); err != nil {
		return nil, err
	}
	return l.aws.dynamo.DeleteItem(ctx, in, opts...)
}

func (l lazyDynamo) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if err := l.aws.load(ctx); err != nil {
		return nil, err
	}
	return l.aws.dynamo.TransactWriteItems(ctx, in, opts...)
}

func (l lazyDynamo) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	if err := l.aws.load(ctx); err != nil {
		return nil, err
	}
	return l.aws.dynamo.BatchWriteItem(ctx, in, opts...)
}

// TableSortKey is the sort key of the claims table (template.yaml's): the
// claims store gives its items the fixed value claims.ClaimSortValue, the
// task store its own; a tool that keeps its items in the same table
// (the demo's note book) gives them values of its own.
const TableSortKey = "sk"

// TableTTL is the attribute the claims table's time to live reads
// (template.yaml's): an item whose expires_at, in seconds since 1970, is
// past is deleted by DynamoDB some time after. The endpoint's items in
// memory honour it as DynamoDB does (items.MemoryOptions.TTL).
const TableTTL = "expires_at"

// lazyStore is a claims.Store whose DynamoDB client is made on the first
// claim.
type lazyStore struct {
	aws   *Clients
	table string
}

var _ claims.Committer = (*lazyStore)(nil)
var _ claims.TableStore = (*lazyStore)(nil)

// Table is the claims table (claims.TableStore).
func (l *lazyStore) Table() string { return l.table }

var _ claims.Transactor = (*lazyStore)(nil)

func (l *lazyStore) store(ctx context.Context) (*claims.DynamoDB, error) {
	if err := l.aws.load(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", claims.ErrUnavailable, err)
	}
	return claims.NewDynamoDBWith(l.aws.dynamo, l.table, claims.DynamoDBOptions{SortKey: TableSortKey}), nil
}

func (l *lazyStore) Claim(ctx context.Context, c claims.Claim, now time.Time) (bool, *claims.Record, error) {
	s, err := l.store(ctx)
	if err != nil {
		return false, nil, err
	}
	return s.Claim(ctx, c, now)
}

func (l *lazyStore) Complete(ctx context.Context, key, owner string, response []byte, oversize bool, expiresAt time.Time) error {
	s, err := l.store(ctx)
	if err != nil {
		return err
	}
	return s.Complete(ctx, key, owner, response, oversize, expiresAt)
}

// CompleteWith implements claims.Transactor: the notes' writes commit
// with the claim (claims.Enlist).
func (l *lazyStore) CompleteWith(ctx context.Context, token string, cs []claims.Completion, writes []types.TransactWriteItem) error {
	s, err := l.store(ctx)
	if err != nil {
		return err
	}
	return s.CompleteWith(ctx, token, cs, writes)
}

// Commit implements claims.Committer: a keyed call of a tool that has no
// effect but its enlisted writes commits in one request.
func (l *lazyStore) Commit(ctx context.Context, token string, c claims.Claim, response []byte, oversize bool, writes []claims.Write, now time.Time) error {
	s, err := l.store(ctx)
	if err != nil {
		return err
	}
	return s.Commit(ctx, token, c, response, oversize, writes, now)
}

func (l *lazyStore) Release(ctx context.Context, key, owner string) error {
	s, err := l.store(ctx)
	if err != nil {
		return err
	}
	return s.Release(ctx, key, owner)
}

// lazyKMS is a reqstate.KMSAPI whose client is made on first use: only a
// multi-round-trip request needs it, and only when its data key is not
// cached yet.
type lazyKMS struct{ aws *Clients }

func (l lazyKMS) GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, opts ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	if err := l.aws.load(ctx); err != nil {
		return nil, err
	}
	countKMSCall(ctx)
	return l.aws.kms.GenerateDataKey(ctx, in, opts...)
}

func (l lazyKMS) Decrypt(ctx context.Context, in *kms.DecryptInput, opts ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	if err := l.aws.load(ctx); err != nil {
		return nil, err
	}
	countKMSCall(ctx)
	return l.aws.kms.Decrypt(ctx, in, opts...)
}

// countKMSCall adds a KMS call to the request's outcome, for the KMSCalls
// metric.
func countKMSCall(ctx context.Context) {
	if o := stateless.OutcomeFrom(ctx); o != nil {
		o.KMSCalls.Add(1)
	}
}
