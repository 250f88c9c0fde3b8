package residency

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Jurisdiction is a legal area and the AWS regions that lie inside it. New
// jurisdictions are added as data, in jurisdictions.
type Jurisdiction struct {
	Code      string   // ISO 3166-1 alpha-2
	Name      string   // human name
	Partition string   // the AWS partition its regions are in, e.g. aws
	Regions   []string // AWS regions inside the jurisdiction
	// CustomerManagedKeys is the jurisdiction's default for
	// require_customer_managed_keys: where its rules expect the data
	// controller to hold the keys (AE), every key that encrypts data must be
	// customer managed unless the provider configuration opts out.
	CustomerManagedKeys bool
}

// jurisdictions is the built-in table. Adding a jurisdiction is adding a row.
var jurisdictions = []Jurisdiction{
	{Code: "AE", Name: "United Arab Emirates", Partition: PartitionAWS, Regions: []string{"me-central-1"}, CustomerManagedKeys: true},
}

// Jurisdictions returns the built-in jurisdictions, sorted by code.
func Jurisdictions() []Jurisdiction {
	out := slices.Clone(jurisdictions)
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// LookupJurisdiction finds a jurisdiction by its code (case-insensitive).
func LookupJurisdiction(code string) (Jurisdiction, bool) {
	for _, j := range jurisdictions {
		if strings.EqualFold(j.Code, code) {
			return j, true
		}
	}
	return Jurisdiction{}, false
}

// PolicyConfig is the residency block as the user wrote it.
type PolicyConfig struct {
	Jurisdiction    string
	AllowedRegions  []string // optional narrowing; must lie inside the jurisdiction
	ExcludedZoneIDs []string
	// RequireCustomerManagedKeys is the setting as written; nil (unset)
	// takes the jurisdiction's default (Jurisdiction.CustomerManagedKeys).
	RequireCustomerManagedKeys *bool
	RequiredTags               []string
	Mode                       Mode // empty means enforce
}

// Policy is the effective residency policy.
type Policy struct {
	Jurisdiction               Jurisdiction
	AllowedRegions             []string
	ExcludedZoneIDs            []string
	RequireCustomerManagedKeys bool
	// CustomerManagedKeysOptOut: the jurisdiction requires customer managed
	// keys by default and the configuration set
	// require_customer_managed_keys = false.
	CustomerManagedKeysOptOut bool
	RequiredTags              []string
	Mode                      Mode
}

// ConfigError is a bad residency setting, with the attribute it concerns.
type ConfigError struct {
	Path string // e.g. residency.jurisdiction
	Msg  string
}

func (e *ConfigError) Error() string { return e.Path + ": " + e.Msg }

// NewPolicy validates cfg and returns the effective policy.
func NewPolicy(cfg PolicyConfig) (*Policy, error) {
	j, ok := LookupJurisdiction(cfg.Jurisdiction)
	if !ok {
		codes := make([]string, 0, len(jurisdictions))
		for _, j := range Jurisdictions() {
			codes = append(codes, j.Code)
		}
		return nil, &ConfigError{Path: "residency.jurisdiction", Msg: fmt.Sprintf("unknown jurisdiction %q; known: %s", cfg.Jurisdiction, strings.Join(codes, ", "))}
	}
	mode := cfg.Mode
	switch mode {
	case "":
		mode = ModeEnforce
	case ModeEnforce, ModeAudit:
	default:
		return nil, &ConfigError{Path: "residency.mode", Msg: fmt.Sprintf("unknown mode %q; use \"enforce\" or \"audit\"", cfg.Mode)}
	}
	allowed := slices.Clone(j.Regions)
	if len(cfg.AllowedRegions) > 0 {
		for i, r := range cfg.AllowedRegions {
			if !slices.Contains(j.Regions, r) {
				return nil, &ConfigError{Path: fmt.Sprintf("residency.allowed_regions[%d]", i), Msg: fmt.Sprintf("region %q is outside jurisdiction %s (%s); regions inside it: %s", r, j.Code, j.Name, strings.Join(j.Regions, ", "))}
			}
		}
		allowed = slices.Clone(cfg.AllowedRegions)
	}
	for i, k := range cfg.RequiredTags {
		if strings.TrimSpace(k) == "" {
			return nil, &ConfigError{Path: fmt.Sprintf("residency.required_tags[%d]", i), Msg: "a required tag key is empty or blank; remove it or name the tag"}
		}
	}
	for i, id := range cfg.ExcludedZoneIDs {
		if !zoneIDRE().MatchString(id) {
			return nil, &ConfigError{Path: fmt.Sprintf("residency.excluded_zone_ids[%d]", i), Msg: fmt.Sprintf("%q is not a zone id; zone ids look like mec1-az2 (not zone names such as me-central-1b)", id)}
		}
	}
	sort.Strings(allowed)
	allowed = slices.Compact(allowed)
	cmk := j.CustomerManagedKeys
	if cfg.RequireCustomerManagedKeys != nil {
		cmk = *cfg.RequireCustomerManagedKeys
	}
	return &Policy{
		Jurisdiction:               j,
		AllowedRegions:             allowed,
		ExcludedZoneIDs:            slices.Clone(cfg.ExcludedZoneIDs),
		RequireCustomerManagedKeys: cmk,
		CustomerManagedKeysOptOut:  j.CustomerManagedKeys && !cmk,
		RequiredTags:               slices.Clone(cfg.RequiredTags),
		Mode:                       mode,
	}, nil
}

// Partition is the AWS partition of the jurisdiction's regions.
func (p *Policy) Partition() string {
	if p.Jurisdiction.Partition == "" {
		return PartitionAWS
	}
	return p.Jurisdiction.Partition
}

// RequireCustomerManagedKeysAttr is the provider setting that requires
// customer managed keys, as the Terraform provider block spells it (the
// Pulumi front end respells it).
const RequireCustomerManagedKeysAttr = "residency.require_customer_managed_keys"

// CustomerManagedKeysOptOut is how a configuration opts out of the rule,
// for the fix of a kms-customer-managed violation.
const CustomerManagedKeysOptOut = RequireCustomerManagedKeysAttr + " = false"

// KeyRef is the reference for a resource's KMS key attribute, where leaving
// it empty means AWS encrypts with its managed default key: a violation
// when the policy requires customer managed keys.
func KeyRef(path, value string) Ref {
	return Ref{Path: path, Kind: KindKMSKey, Value: value, DefaultKey: true}
}

// RegionAllowed reports whether region is in the policy's allowlist.
func (p *Policy) RegionAllowed(region string) bool {
	return slices.Contains(p.AllowedRegions, region)
}

// ZoneIDAllowed reports whether a zone id is allowed: its region prefix must
// belong to an allowed region (checked by the caller) and it is not excluded.
func (p *Policy) ZoneIDAllowed(zoneID string) bool {
	return !slices.Contains(p.ExcludedZoneIDs, zoneID)
}
