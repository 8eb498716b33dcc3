// Package awskms adapts the AWS SDK's KMS client to reqstate.KeyService,
// the key service of the KMS-rooted request-state sealer.
package awskms

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
)

// API is the part of the KMS client the adapter uses; *kms.Client has it.
type API interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, opts ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, opts ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// Service is a reqstate.KeyService over KMS.
type Service struct{ api API }

// New returns the key service of client.
func New(client API) *Service { return &Service{api: client} }

var _ reqstate.KeyService = (*Service)(nil)

// GenerateDataKey implements reqstate.KeyService.
func (s *Service) GenerateDataKey(ctx context.Context, keyID string, encCtx map[string]string) ([]byte, []byte, error) {
	out, err := s.api.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: &keyID, KeySpec: types.DataKeySpecAes256, EncryptionContext: encCtx})
	if err != nil {
		return nil, nil, err
	}
	return out.Plaintext, out.CiphertextBlob, nil
}

// Decrypt implements reqstate.KeyService. Ciphertext that KMS finds
// invalid or under another key is the presenter's fault.
func (s *Service) Decrypt(ctx context.Context, keyID string, encrypted []byte, encCtx map[string]string) ([]byte, error) {
	out, err := s.api.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: encrypted, KeyId: &keyID, EncryptionContext: encCtx})
	if err != nil {
		var invalid *types.InvalidCiphertextException
		var incorrect *types.IncorrectKeyException
		if errors.As(err, &invalid) || errors.As(err, &incorrect) {
			return nil, fmt.Errorf("%w: %w", reqstate.ErrKeyRefused, err)
		}
		return nil, err
	}
	return out.Plaintext, nil
}
