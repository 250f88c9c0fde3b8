package pulumi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	p "github.com/pulumi/pulumi-go-provider"
)

// Schema returns the provider's package schema as indented JSON: the content
// of pulumi/schema.json, from which the SDKs are generated. It carries no
// version, so that it changes only when the provider's interface does.
func Schema(ctx context.Context) ([]byte, error) {
	prov, err := Provider()
	if err != nil {
		return nil, err
	}
	spec, err := p.GetSchema(ctx, Name, "", prov)
	if err != nil {
		return nil, fmt.Errorf("getting the provider schema: %w", err)
	}
	spec.Version = ""
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the provider schema: %w", err)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return nil, fmt.Errorf("indenting the provider schema: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}
