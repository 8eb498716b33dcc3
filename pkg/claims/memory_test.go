package claims_test

import (
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims/claimstest"
)

func TestMemoryContract(t *testing.T) {
	claimstest.Run(t, func(t *testing.T) claims.Store { return claims.NewMemory() })
}
