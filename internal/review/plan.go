package review

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
)

// Source is the tool a plan came from.
type Source string

const (
	SourceTerraform Source = "terraform"
	SourcePulumi    Source = "pulumi"
)

// Action is what a plan does to one resource.
type Action string

const (
	ActionCreate  Action = "create"
	ActionUpdate  Action = "update"
	ActionReplace Action = "replace"
	ActionDelete  Action = "delete"
	ActionNoop    Action = "no-op"
	ActionRead    Action = "read"
)

// Change is one resource in a plan, the same for Terraform and Pulumi.
// Attribute names are Terraform's (snake_case); Pulumi's camelCase inputs are
// converted. Before is nil for a create, After nil for a delete.
type Change struct {
	Address      string
	Type         string // Terraform resource type, e.g. mlplatform_gpu_cluster, aws_s3_bucket
	Provider     string // provider name, e.g. registry.terraform.io/hashicorp/aws or aws
	Action       Action
	Before       map[string]any
	After        map[string]any
	afterUnknown any      // Terraform's after_unknown mirror: true where a value is known only after apply
	ReplacePaths []string // attribute paths that force the replacement
	ActionReason string   // Terraform's action_reason, Pulumi's replace reasons in words
	// Region is the region the resource's provider configuration names
	// ("" when none does; Unknown when only apply knows).
	Region       string
	RegionSource string // where Region comes from, e.g. provider "aws.eu" configuration
}

// unknownValue stands for a value known only after apply.
const unknownValue = "(known after apply)"

// Plan is a parsed plan: every resource change and the provider settings the
// review needs.
type Plan struct {
	Source           Source
	ToolVersion      string
	Changes          []Change
	Providers        []ProviderConfig
	residencyBlock   map[string]any // the mlplatform provider's residency settings, when the plan has them
	residencyUnknown bool           // the residency block references values the plan does not carry
}

// ProviderConfig is one provider configuration and the region it names.
type ProviderConfig struct {
	Key    string // e.g. aws, aws.eu, mlplatform
	Name   string // e.g. aws
	Region string // constant or resolved from variables; unknownValue when not known before apply
}

// ErrInput marks input the review cannot read: exit code 2.
var ErrInput = errors.New("unreadable plan")

// maxPlanBytes bounds the input: a plan larger than this is refused rather
// than read into memory.
const maxPlanBytes = 256 << 20

// ParsePlan reads `terraform show -json` or `pulumi preview --json` output.
func ParsePlan(data []byte) (*Plan, error) {
	if len(data) > maxPlanBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the %d byte limit", ErrInput, len(data), maxPlanBytes)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object: %v", ErrInput, err)
	}
	switch {
	case probe["format_version"] != nil:
		return parseTerraform(data)
	case probe["steps"] != nil || probe["changeSummary"] != nil || probe["config"] != nil:
		return parsePulumi(data)
	}
	return nil, fmt.Errorf("%w: neither `terraform show -json` output (no format_version) nor `pulumi preview --json` output (no steps)", ErrInput)
}

// tfExtra holds what terraform-json does not model: action_reason, and a
// single nested block in a provider configuration (rendered as an object,
// which terraform-json reads as an empty expression).
type tfExtra struct {
	Configuration struct {
		ProviderConfig map[string]struct {
			Expressions map[string]json.RawMessage `json:"expressions"`
		} `json:"provider_config"`
	} `json:"configuration"`
	ResourceChanges []struct {
		Address      string `json:"address"`
		Deposed      string `json:"deposed"`
		ActionReason string `json:"action_reason"`
	} `json:"resource_changes"`
}

func parseTerraform(data []byte) (*Plan, error) {
	var tp tfjson.Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&tp); err != nil {
		return nil, fmt.Errorf("%w: terraform plan JSON: %v", ErrInput, err)
	}
	var extra tfExtra
	if err := json.Unmarshal(data, &extra); err != nil {
		return nil, fmt.Errorf("%w: terraform plan JSON: %v", ErrInput, err)
	}
	reasons := map[string]string{}
	for _, rc := range extra.ResourceChanges {
		reasons[rc.Address+"|"+rc.Deposed] = rc.ActionReason
	}
	p := &Plan{Source: SourceTerraform, ToolVersion: tp.TerraformVersion}
	vars := map[string]any{}
	for k, v := range tp.Variables {
		if v != nil {
			vars[k] = v.Value
		}
	}
	providerKeys := map[string]string{} // config resource address -> provider config key
	if tp.Config != nil {
		for key, pc := range tp.Config.ProviderConfigs {
			if pc == nil {
				continue
			}
			cfg := ProviderConfig{Key: key, Name: pc.Name}
			if e, ok := pc.Expressions["region"]; ok {
				cfg.Region = exprString(e, vars)
			}
			p.Providers = append(p.Providers, cfg)
			if pc.Name == "mlplatform" && pc.Alias == "" && pc.ModuleAddress == "" {
				p.residencyBlock, p.residencyUnknown = exprBlock(nestedBlock(extra.Configuration.ProviderConfig[key].Expressions["residency"]), vars)
			}
		}
		collectProviderKeys(tp.Config.RootModule, "", providerKeys)
	}
	sort.Slice(p.Providers, func(i, j int) bool { return p.Providers[i].Key < p.Providers[j].Key })
	for _, rc := range tp.ResourceChanges {
		if rc == nil || rc.Change == nil || rc.Mode != tfjson.ManagedResourceMode {
			continue
		}
		c := Change{
			Address:      rc.Address,
			Type:         rc.Type,
			Provider:     rc.ProviderName,
			Action:       tfAction(rc.Change.Actions),
			afterUnknown: rc.Change.AfterUnknown,
			ActionReason: reasons[rc.Address+"|"+rc.DeposedKey],
		}
		c.Before, _ = rc.Change.Before.(map[string]any)
		c.After, _ = rc.Change.After.(map[string]any)
		if c.Action == ActionDelete {
			c.After = nil
		}
		for _, rp := range rc.Change.ReplacePaths {
			c.ReplacePaths = append(c.ReplacePaths, pathString(rp))
		}
		if rc.DeposedKey != "" {
			c.Address += " (deposed " + rc.DeposedKey + ")"
		}
		key := providerKeys[configAddress(rc)]
		if key == "" {
			key = defaultProviderKey(rc.ProviderName)
		}
		for _, pc := range p.Providers {
			if pc.Key == key {
				c.Region, c.RegionSource = pc.Region, fmt.Sprintf("provider %q configuration", pc.Key)
			}
		}
		p.Changes = append(p.Changes, c)
	}
	return p, nil
}

// configAddress is a resource change's address in configuration: module
// path without instance keys, then type.name.
func configAddress(rc *tfjson.ResourceChange) string {
	mod := stripIndexes(rc.ModuleAddress)
	a := rc.Type + "." + rc.Name
	if mod != "" {
		a = mod + "." + a
	}
	return a
}

func stripIndexes(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func collectProviderKeys(m *tfjson.ConfigModule, prefix string, out map[string]string) {
	if m == nil {
		return
	}
	for _, r := range m.Resources {
		if r == nil || r.Mode != tfjson.ManagedResourceMode {
			continue
		}
		a := r.Address
		if prefix != "" {
			a = prefix + "." + a
		}
		out[a] = r.ProviderConfigKey
	}
	for name, mc := range m.ModuleCalls {
		if mc == nil {
			continue
		}
		p := "module." + name
		if prefix != "" {
			p = prefix + "." + p
		}
		collectProviderKeys(mc.Module, p, out)
	}
}

// defaultProviderKey is the key of the default configuration of a provider
// address: registry.terraform.io/hashicorp/aws -> aws.
func defaultProviderKey(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[i+1:]
	}
	return name
}

func tfAction(a tfjson.Actions) Action {
	switch {
	case a.Replace():
		return ActionReplace
	case a.Create():
		return ActionCreate
	case a.Update():
		return ActionUpdate
	case a.Delete():
		return ActionDelete
	case a.Read():
		return ActionRead
	}
	return ActionNoop
}

// exprString is a provider expression's string value: its constant, or the
// variable it references alone; unknownValue otherwise.
func exprString(e *tfjson.Expression, vars map[string]any) string {
	if e == nil || e.ExpressionData == nil {
		return ""
	}
	if s, ok := e.ConstantValue.(string); ok {
		return s
	}
	for _, ref := range e.References {
		if name, ok := strings.CutPrefix(ref, "var."); ok {
			if s, ok := vars[name].(string); ok {
				return s
			}
		}
	}
	if len(e.References) > 0 {
		return unknownValue
	}
	return ""
}

// exprBlock reads a single nested block of constant (or variable) values.
func exprBlock(e *tfjson.Expression, vars map[string]any) (map[string]any, bool) {
	if e == nil || e.ExpressionData == nil || len(e.NestedBlocks) == 0 {
		return nil, false
	}
	out := map[string]any{}
	unknown := false
	for k, sub := range e.NestedBlocks[0] {
		if sub == nil || sub.ExpressionData == nil {
			continue
		}
		switch {
		case sub.ConstantValue != nil && sub.ConstantValue != tfjson.UnknownConstantValue:
			out[k] = sub.ConstantValue
		case len(sub.References) > 0:
			resolved := false
			for _, ref := range sub.References {
				if name, ok := strings.CutPrefix(ref, "var."); ok {
					if v, ok := vars[name]; ok {
						out[k], resolved = v, true
						break
					}
				}
			}
			if !resolved {
				unknown = true
			}
		}
	}
	return out, unknown
}

// nestedBlock reads a block expression that is either a list of blocks
// (what terraform-json expects) or a single object of expressions (how
// Terraform renders a single nested block).
func nestedBlock(raw json.RawMessage) *tfjson.Expression {
	if len(raw) == 0 {
		return nil
	}
	var e tfjson.Expression
	if err := json.Unmarshal(raw, &e); err == nil && e.ExpressionData != nil && len(e.NestedBlocks) > 0 {
		return &e
	}
	var obj map[string]*tfjson.Expression
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil
	}
	if _, ok := obj["constant_value"]; ok {
		return nil
	}
	if _, ok := obj["references"]; ok {
		return nil
	}
	return &tfjson.Expression{ExpressionData: &tfjson.ExpressionData{NestedBlocks: []map[string]*tfjson.Expression{obj}}}
}

// pathString renders a Terraform path (["features", 2, "type"]) as
// features[2].type.
func pathString(p any) string {
	steps, ok := p.([]any)
	if !ok {
		return fmt.Sprint(p)
	}
	var b strings.Builder
	for _, s := range steps {
		switch v := s.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(v)
		case float64:
			fmt.Fprintf(&b, "[%d]", int(v))
		case json.Number:
			fmt.Fprintf(&b, "[%s]", v)
		default:
			fmt.Fprintf(&b, "[%v]", v)
		}
	}
	return b.String()
}
