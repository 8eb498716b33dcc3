//go:build bench_eager_sdk

package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// The bare-sdk subject of bench/coldstart is bare making, at start, the
// AWS SDK clients the deployed function uses (DynamoDB, KMS, Lambda), as
// most Lambda functions in Go do: the cold start the library's gate is
// measured against (the deployed function must stay below it; it links
// the same clients but makes them on first use).
var clients struct {
	dynamo *dynamodb.Client
	kms    *kms.Client
	lambda *lambda.Client
}

func init() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	clients.dynamo, clients.kms, clients.lambda = dynamodb.NewFromConfig(cfg), kms.NewFromConfig(cfg), lambda.NewFromConfig(cfg)
}
