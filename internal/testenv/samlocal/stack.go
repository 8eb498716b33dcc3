package samlocal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/localkms"
)

// Stack is DynamoDB Local and local-kms, started the way an env-vars
// file expects them: the table it names created, the key it names seeded.
type Stack struct {
	DynamoDB *dynamolocal.Server
	KMS      *localkms.Server
	Table    string
	KeyARN   string
}

// StackOptions configure StartStack.
type StackOptions struct {
	// SeedPath is the local-kms seed file that holds the env's key.
	SeedPath string
	// FixedPorts listens on the ports the env's endpoints name (make
	// local-aws, for sam local). Otherwise each server gets a free port and
	// Env rewrites the endpoints (tests: two runs never collide).
	FixedPorts bool
	// Exposed accepts that both servers listen on every interface (they
	// have no host option): a developer's session only.
	Exposed bool
}

// StartStack starts both servers for env (an env-vars file's section
// that sets the two endpoints, the table and the key ARN), creates the
// table, and checks that the seeded key answers to the ARN.
func StartStack(ctx context.Context, env map[string]string, o StackOptions) (*Stack, error) {
	ddbEnd, err := ParseEndpoint(env, EnvDynamoDBEndpoint)
	if err != nil {
		return nil, err
	}
	kmsEnd, err := ParseEndpoint(env, EnvKMSEndpoint)
	if err != nil {
		return nil, err
	}
	table := env[EnvClaimsTable]
	if table == "" {
		return nil, fmt.Errorf("samlocal: %s is not set", EnvClaimsTable)
	}
	arn, err := ParseKeyARN(env[EnvStateKMSKey])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvStateKMSKey, err)
	}
	ddbOpts := dynamolocal.Options{SharedDB: true, Exposed: o.Exposed}
	kmsOpts := localkms.Options{SeedPath: o.SeedPath, Region: arn.Region, Account: arn.Account, Exposed: o.Exposed}
	if o.FixedPorts {
		ddbOpts.Port, kmsOpts.Port = ddbEnd.Port, kmsEnd.Port
	}
	s := &Stack{Table: table, KeyARN: env[EnvStateKMSKey]}
	if s.DynamoDB, err = dynamolocal.StartWith(ctx, ddbOpts); err != nil {
		return nil, err
	}
	if s.KMS, err = localkms.StartWith(ctx, kmsOpts); err != nil {
		s.Stop()
		return nil, err
	}
	if err := dynamolocal.CreateTable(ctx, s.DynamoDB.Client(), table); err != nil {
		s.Stop()
		return nil, fmt.Errorf("samlocal: creating the table %s: %w", table, err)
	}
	out, err := s.KMS.Client().DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String(s.KeyARN)})
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("samlocal: the seed file %s does not hold %s=%s: %w", o.SeedPath, EnvStateKMSKey, s.KeyARN, err)
	}
	if out.KeyMetadata == nil || !out.KeyMetadata.Enabled || out.KeyMetadata.KeyUsage != kmstypes.KeyUsageTypeEncryptDecrypt {
		s.Stop()
		return nil, fmt.Errorf("samlocal: %s is not an enabled encryption key", s.KeyARN)
	}
	return s, nil
}

// Env returns env with the two endpoints pointing at this stack's
// servers; nothing else changes.
func (s *Stack) Env(env map[string]string) (map[string]string, error) {
	out, err := WithEndpoint(env, EnvDynamoDBEndpoint, strings.TrimPrefix(s.DynamoDB.Endpoint, "http://"))
	if err != nil {
		return nil, err
	}
	return WithEndpoint(out, EnvKMSEndpoint, strings.TrimPrefix(s.KMS.Endpoint, "http://"))
}

// ResetTable deletes the table and creates it again, empty: a fresh
// table for each independent event, so that one event's notes never show
// in another's answer.
func (s *Stack) ResetTable(ctx context.Context) error {
	c := s.DynamoDB.Client()
	_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(s.Table)})
	var missing *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &missing) {
		return fmt.Errorf("samlocal: deleting the table: %w", err)
	}
	if err := dynamodb.NewTableNotExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.Table)}, 30*time.Second); err != nil {
		return fmt.Errorf("samlocal: waiting for the table to go: %w", err)
	}
	if err := dynamolocal.CreateTable(ctx, c, s.Table); err != nil {
		return fmt.Errorf("samlocal: creating the table: %w", err)
	}
	return nil
}

// Stop ends both servers.
func (s *Stack) Stop() {
	if s.KMS != nil {
		s.KMS.Stop()
	}
	if s.DynamoDB != nil {
		s.DynamoDB.Stop()
	}
}
