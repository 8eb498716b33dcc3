package stateless

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
)

// isIntegerLiteral reports whether a JSON number is an integer in JSON
// Schema's sense: its value has no fractional part (so 2.0 is one).
func isIntegerLiteral(v []byte) bool {
	for _, c := range v {
		if c == '.' || c == 'e' || c == 'E' {
			f, err := strconv.ParseFloat(string(v), 64)
			return err == nil && f == math.Trunc(f) && !math.IsInf(f, 0)
		}
	}
	return true
}

// finiteLiteral reports whether a JSON number surely fits a float64:
// no exponent and fewer digits than the largest float64 has.
func finiteLiteral(v []byte) bool {
	if len(v) > 300 {
		return false
	}
	for _, c := range v {
		if c == 'e' || c == 'E' {
			f, err := strconv.ParseFloat(string(v), 64)
			return err == nil && !math.IsInf(f, 0)
		}
	}
	return true
}

// schemaValidator validates JSON bytes against a tool schema, on the flat
// fast path when the schema allows it.
type schemaValidator struct {
	flat     *flatSchema
	resolved *jsonschema.Resolved
}

func newSchemaValidator(r *jsonschema.Resolved, raw []byte) *schemaValidator {
	return &schemaValidator{flat: compileFlat(raw), resolved: r}
}

// validate checks data, which must be valid JSON.
func (v *schemaValidator) validate(data []byte) error {
	if v.flat != nil {
		err := v.flat.validate(data)
		if err != errFlatFallback {
			return err
		}
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		return err
	}
	return v.resolved.Validate(generic)
}
