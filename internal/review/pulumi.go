package review

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// pulumiUnknown is the value the Pulumi engine writes for an output not
// known until the update runs (resource.UnknownStringValue).
const pulumiUnknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

// The shape of `pulumi preview --json` (pkg/backend/display.PreviewDigest).
type pulumiDigest struct {
	Config map[string]string `json:"config"`
	Steps  []pulumiStep      `json:"steps"`
}

type pulumiStep struct {
	Op             string          `json:"op"`
	URN            string          `json:"urn"`
	Provider       string          `json:"provider"`
	OldState       *pulumiResource `json:"oldState"`
	NewState       *pulumiResource `json:"newState"`
	DiffReasons    []string        `json:"diffReasons"`
	ReplaceReasons []string        `json:"replaceReasons"`
}

type pulumiResource struct {
	Type     string         `json:"type"`
	URN      string         `json:"urn"`
	Custom   bool           `json:"custom"`
	Inputs   map[string]any `json:"inputs"`
	Outputs  map[string]any `json:"outputs"`
	Provider string         `json:"provider"`
}

func parsePulumi(data []byte) (*Plan, error) {
	var d pulumiDigest
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%w: pulumi preview JSON: %v", ErrInput, err)
	}
	p := &Plan{Source: SourcePulumi}
	// Stack configuration: mlplatform:region, aws:region, mlplatform:residency (a JSON object).
	regions := map[string]string{}
	for k, v := range d.Config {
		pkg, key, ok := strings.Cut(k, ":")
		if !ok {
			continue
		}
		switch key {
		case "region":
			regions[pkg] = v
		case "residency":
			if pkg == "mlplatform" {
				var m map[string]any
				if err := json.Unmarshal([]byte(v), &m); err == nil {
					p.residencyBlock = snakeKeys(m).(map[string]any)
				}
			}
		}
	}
	for pkg, r := range regions {
		p.Providers = append(p.Providers, ProviderConfig{Key: pkg, Name: pkg, Region: r})
	}
	// Explicit provider resources (pulumi:providers:PKG) carry their own region.
	providerRegion := map[string]string{} // provider URN -> region
	order := []string{}
	byURN := map[string]*Change{}
	for _, s := range d.Steps {
		st := s.NewState
		if st == nil {
			st = s.OldState
		}
		if st == nil || s.URN == "" {
			continue
		}
		if pkg, ok := strings.CutPrefix(st.Type, "pulumi:providers:"); ok {
			in := s.NewState
			if in == nil {
				in = s.OldState
			}
			r, _ := in.Inputs["region"].(string)
			if r == pulumiUnknown {
				r = unknownValue
			}
			providerRegion[s.URN] = r
			if pkg == "mlplatform" {
				if m, ok := in.Inputs["residency"].(map[string]any); ok {
					p.residencyBlock = snakeKeys(m).(map[string]any)
				} else if js, ok := in.Inputs["residency"].(string); ok {
					var m map[string]any
					if json.Unmarshal([]byte(js), &m) == nil {
						p.residencyBlock = snakeKeys(m).(map[string]any)
					}
				}
			}
			p.Providers = append(p.Providers, ProviderConfig{Key: urnName(s.URN), Name: pkg, Region: r})
			continue
		}
		if !st.Custom {
			continue // components hold no cloud resource
		}
		c, seen := byURN[s.URN]
		if !seen {
			c = &Change{Address: pulumiAddress(s.URN), Type: pulumiType(st.Type), Provider: pulumiPackage(st.Type)}
			byURN[s.URN] = c
			order = append(order, s.URN)
		}
		if s.OldState != nil && c.Before == nil {
			c.Before = snakeKeys(stateValues(s.OldState)).(map[string]any)
		}
		if s.NewState != nil && (s.Op != "delete-replaced" || c.After == nil) && s.Op != "delete" {
			c.After = snakeKeys(stateValues(s.NewState)).(map[string]any)
		}
		act := pulumiAction(s.Op)
		if act == ActionReplace || c.Action == ActionReplace {
			c.Action = ActionReplace
		} else if !seen || act != ActionNoop {
			c.Action = act
		}
		for _, rr := range s.ReplaceReasons {
			c.ReplacePaths = appendUnique(c.ReplacePaths, camelToSnake(rr))
		}
		if len(s.ReplaceReasons) > 0 {
			c.ActionReason = "replace because " + strings.Join(snakeAll(s.ReplaceReasons), ", ") + " cannot be updated in place"
		}
		prov := s.Provider
		if prov == "" {
			prov = st.Provider
		}
		if r, ok := providerRegion[providerURN(prov)]; ok {
			c.Region, c.RegionSource = r, fmt.Sprintf("provider %q", urnName(providerURN(prov)))
		} else if r, ok := regions[c.Provider]; ok {
			c.Region, c.RegionSource = r, fmt.Sprintf("stack config %s:region", c.Provider)
		}
	}
	for _, u := range order {
		c := byURN[u]
		if c.Action == ActionDelete {
			c.After = nil
		}
		if c.Action == ActionCreate {
			c.Before = nil
		}
		p.Changes = append(p.Changes, *c)
	}
	sort.Slice(p.Providers, func(i, j int) bool { return p.Providers[i].Key < p.Providers[j].Key })
	return p, nil
}

// stateValues are a resource's inputs overlaid with its outputs: outputs
// carry computed values (the chosen type, ARNs) once known.
func stateValues(r *pulumiResource) map[string]any {
	out := map[string]any{}
	for k, v := range r.Inputs {
		out[k] = v
	}
	for k, v := range r.Outputs {
		if _, ok := out[k]; !ok || v != nil {
			out[k] = v
		}
	}
	return out
}

func pulumiAction(op string) Action {
	switch op {
	case "create":
		return ActionCreate
	case "update":
		return ActionUpdate
	case "delete":
		return ActionDelete
	case "replace", "create-replacement", "delete-replaced":
		return ActionReplace
	case "read", "read-replacement":
		return ActionRead
	}
	return ActionNoop
}

// pulumiTypeOverrides are tokens whose Terraform names do not follow from
// the token.
var pulumiTypeOverrides = map[string]string{
	"aws:ec2/instance:Instance":                              "aws_instance",
	"aws:s3/bucketV2:BucketV2":                               "aws_s3_bucket",
	"aws:s3/bucketReplicationConfig:BucketReplicationConfig": "aws_s3_bucket_replication_configuration",
}

// pulumiType maps a type token to the Terraform resource type it stands
// for: mlplatform:index:GpuCluster -> mlplatform_gpu_cluster,
// aws:s3/bucket:Bucket -> aws_s3_bucket, aws:kms/key:Key -> aws_kms_key.
func pulumiType(token string) string {
	if t, ok := pulumiTypeOverrides[token]; ok {
		return t
	}
	parts := strings.Split(token, ":")
	if len(parts) != 3 {
		return token
	}
	pkg, mod, name := parts[0], parts[1], parts[2]
	mod, _, _ = strings.Cut(mod, "/")
	if mod == "index" || mod == "" {
		return pkg + "_" + camelToSnake(name)
	}
	return pkg + "_" + camelToSnake(mod) + "_" + camelToSnake(name)
}

// pulumiAddress shortens a URN (urn:pulumi:STACK::PROJECT::TYPE::NAME) to
// TYPE::NAME, the part a reviewer recognises.
func pulumiAddress(urn string) string {
	parts := strings.SplitN(urn, "::", 3)
	if len(parts) == 3 && strings.HasPrefix(urn, "urn:pulumi:") {
		return parts[2]
	}
	return urn
}

func pulumiPackage(token string) string {
	pkg, _, _ := strings.Cut(token, ":")
	return pkg
}

// providerURN strips the provider reference's id: URN::ID.
func providerURN(ref string) string {
	if i := strings.LastIndex(ref, "::"); i > 0 && strings.HasPrefix(ref, "urn:") {
		return ref[:i]
	}
	return ref
}

func urnName(urn string) string {
	if i := strings.LastIndex(urn, "::"); i >= 0 {
		return urn[i+2:]
	}
	return urn
}

// camelToSnake converts instanceType to instance_type, kmsKeyArn to
// kms_key_arn and GpuCluster to gpu_cluster.
func camelToSnake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) && rs[i-1] != '_' {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func snakeAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = camelToSnake(s)
	}
	return out
}

// snakeKeys converts object keys recursively; tags maps keep their keys,
// and the unknown sentinel becomes unknownValue.
func snakeKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			sk := camelToSnake(k)
			if sk == "tags" || sk == "tags_all" || sk == "default_tags" || sk == "environment" {
				out[sk] = e
				continue
			}
			out[sk] = snakeKeys(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = snakeKeys(e)
		}
		return out
	case string:
		if t == pulumiUnknown {
			return unknownValue
		}
	}
	return v
}

func appendUnique(ss []string, s string) []string {
	for _, e := range ss {
		if e == s {
			return ss
		}
	}
	return append(ss, s)
}
