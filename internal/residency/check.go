package residency

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Stable rule ids. Front ends and tests match on these; the words around
// them may change.
const (
	RuleRegionAllowed      = "region-allowed"
	RuleZoneAllowed        = "zone-allowed"
	RuleZoneExcluded       = "zone-excluded"
	RuleKMSKeyRegion       = "kms-key-region"
	RuleKMSCustomerManaged = "kms-customer-managed"
	RuleS3BucketRegion     = "s3-bucket-region"
	RuleS3Replication      = "s3-replication"
	RuleECRImageRegion     = "ecr-image-region"
	RuleARNRegion          = "arn-region"
	RuleRequiredTag        = "required-tag"
	RuleUnverifiable       = "unverifiable"
	RuleNotECR             = "not-ecr"
)

// Errors a Locator wraps so that the engine can say how to fix an
// unverifiable reference.
var (
	ErrNotFound     = errors.New("not found")
	ErrAccessDenied = errors.New("access denied")
)

// Check evaluates every reference against the policy and returns the
// violations in the order of refs. Anything the engine cannot verify (a
// locator error, a value it cannot parse, no locator) is a violation with rule
// "unverifiable": the engine fails closed. Empty values are skipped: an unset
// optional attribute refers to nothing. The error is for a cancelled context
// only.
//
// Lookups are memoised for the duration of the call only.
func (p *Policy) Check(ctx context.Context, loc Locator, refs []Ref) ([]Violation, error) {
	c := &checker{p: p, loc: loc, buckets: map[string]bucketFacts{}, keys: map[string]keyFacts{}, zones: map[string]zoneFacts{}}
	var out []Violation
	for _, r := range refs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("checking residency: %w", err)
		}
		if r.Value == "" {
			continue
		}
		out = append(out, c.check(ctx, r)...)
	}
	return out, nil
}

// Enforcing reports whether violations are errors (enforce) rather than
// warnings (audit).
func (p *Policy) Enforcing() bool { return p.Mode != ModeAudit }

type bucketFacts struct {
	region      string
	err         error
	replication []string
	replErr     error
	replDone    bool
}

type keyFacts struct {
	info KeyInfo
	err  error
}

type zoneFacts struct {
	id  string
	err error
}

type checker struct {
	p       *Policy
	loc     Locator
	buckets map[string]bucketFacts
	keys    map[string]keyFacts
	zones   map[string]zoneFacts
}

func (c *checker) allowedList() string { return strings.Join(c.p.AllowedRegions, ", ") }

// outside is the common tail: "outside jurisdiction AE (allowed regions: me-central-1)".
func (c *checker) outside() string {
	return fmt.Sprintf("outside jurisdiction %s (allowed regions: %s)", c.p.Jurisdiction.Code, c.allowedList())
}

// example is an allowed region to show in fixes.
func (c *checker) example() string {
	if len(c.p.AllowedRegions) == 0 {
		return "REGION"
	}
	return c.p.AllowedRegions[0]
}

func (c *checker) examplePrefix() string {
	if p, ok := ZoneIDPrefix(c.example()); ok {
		return p
	}
	return "PREFIX"
}

func (c *checker) firstAllowed() string {
	if len(c.p.AllowedRegions) == 1 {
		return c.example()
	}
	return "one of " + c.allowedList()
}

func (c *checker) v(r Ref, rule, msg, fix string) Violation {
	return Violation{Path: r.Path, Value: r.Value, Rule: rule, Msg: msg, Fix: fix}
}

func (c *checker) check(ctx context.Context, r Ref) []Violation {
	switch r.Kind {
	case KindRegion:
		return c.region(r)
	case KindZone:
		return c.zone(ctx, r)
	case KindZoneID:
		return c.zoneID(r)
	case KindKMSKey:
		return c.kmsKey(ctx, r)
	case KindS3URI:
		return c.s3(ctx, r, r.Value)
	case KindECRImage:
		return c.ecr(r)
	case KindARN:
		return c.arn(ctx, r)
	default:
		return []Violation{c.v(r, RuleUnverifiable, fmt.Sprintf("unknown reference kind %q", r.Kind), "report this as a bug in the provider")}
	}
}

func (c *checker) region(r Ref) []Violation {
	if c.p.RegionAllowed(r.Value) {
		return nil
	}
	return []Violation{c.v(r, RuleRegionAllowed,
		fmt.Sprintf("region %q is %s", r.Value, c.outside()),
		fmt.Sprintf("use %s", c.firstAllowed()))}
}

func (c *checker) allowedZonePrefixes() string {
	var ps []string
	for _, r := range c.p.AllowedRegions {
		if p, ok := ZoneIDPrefix(r); ok {
			ps = append(ps, p+"-az*")
		}
	}
	return strings.Join(ps, ", ")
}

func (c *checker) excludedFix() string {
	return fmt.Sprintf("choose another zone in %s; excluded zone ids: %s", c.firstAllowed(), strings.Join(c.p.ExcludedZoneIDs, ", "))
}

func (c *checker) zone(ctx context.Context, r Ref) []Violation {
	region, err := ParseZoneName(r.Value)
	if err != nil {
		return []Violation{c.v(r, RuleUnverifiable, err.Error(), fmt.Sprintf("give a zone name such as %sa", c.example()))}
	}
	if !c.p.RegionAllowed(region) {
		return []Violation{c.v(r, RuleZoneAllowed,
			fmt.Sprintf("zone %q is in region %s, %s", r.Value, region, c.outside()),
			fmt.Sprintf("choose a zone in %s", c.firstAllowed()))}
	}
	if len(c.p.ExcludedZoneIDs) == 0 {
		return nil // nothing excluded: the name alone decides
	}
	if c.loc == nil {
		return []Violation{c.noLocator(r, "the zone id of "+r.Value)}
	}
	key := region + "/" + r.Value
	f, ok := c.zones[key]
	if !ok {
		f.id, f.err = c.loc.ZoneID(ctx, region, r.Value)
		c.zones[key] = f
	}
	if f.err != nil {
		return []Violation{c.v(r, RuleUnverifiable,
			fmt.Sprintf("cannot resolve zone %q to a zone id, so zone exclusions cannot be checked: %v", r.Value, f.err),
			fixFor(f.err, "grant ec2:DescribeAvailabilityZones to the provider's credentials", "check the zone name, or give the zone id instead"))}
	}
	if !c.p.ZoneIDAllowed(f.id) {
		return []Violation{c.v(r, RuleZoneExcluded,
			fmt.Sprintf("zone %q is zone id %s, which the policy excludes", r.Value, f.id),
			c.excludedFix())}
	}
	return nil
}

func (c *checker) zoneID(r Ref) []Violation {
	if !zoneIDRE.MatchString(r.Value) {
		return []Violation{c.v(r, RuleUnverifiable,
			fmt.Sprintf("zone id %q: want PREFIX-azN, e.g. %s-az1", r.Value, c.examplePrefix()),
			fmt.Sprintf("give a zone id of the form %s", c.allowedZonePrefixes()))}
	}
	region, err := ParseZoneID(r.Value)
	if err != nil {
		return []Violation{c.v(r, RuleZoneAllowed,
			fmt.Sprintf("zone id %q has a region prefix not known to lie in jurisdiction %s (allowed regions: %s)", r.Value, c.p.Jurisdiction.Code, c.allowedList()),
			fmt.Sprintf("choose a zone id of the form %s", c.allowedZonePrefixes()))}
	}
	if !c.p.RegionAllowed(region) {
		return []Violation{c.v(r, RuleZoneAllowed,
			fmt.Sprintf("zone id %q is in region %s, %s", r.Value, region, c.outside()),
			fmt.Sprintf("choose a zone id of the form %s", c.allowedZonePrefixes()))}
	}
	if !c.p.ZoneIDAllowed(r.Value) {
		return []Violation{c.v(r, RuleZoneExcluded, fmt.Sprintf("zone id %s is excluded by the policy", r.Value), c.excludedFix())}
	}
	return nil
}

// awsManagedAlias reports whether an alias name (alias/aws/s3) denotes an
// AWS managed key.
func awsManagedAlias(resource string) bool { return strings.HasPrefix(resource, "alias/aws/") }

func (c *checker) kmsKey(ctx context.Context, r Ref) []Violation {
	cmkFix := fmt.Sprintf("create a customer managed key in %s (aws_kms_key) and reference its ARN", c.firstAllowed())
	var arn ARN
	isARN := strings.HasPrefix(r.Value, "arn:")
	if isARN {
		var err error
		arn, err = ParseARN(r.Value)
		if err != nil || arn.Service != "kms" || !(strings.HasPrefix(arn.Resource, "key/") || strings.HasPrefix(arn.Resource, "alias/")) {
			msg := fmt.Sprintf("%q is not a KMS key or alias ARN", r.Value)
			if err != nil {
				msg = err.Error()
			}
			return []Violation{c.v(r, RuleUnverifiable, msg, fmt.Sprintf("give a key ARN such as arn:aws:kms:%s:ACCOUNT:key/KEY-ID", c.example()))}
		}
		if !c.p.RegionAllowed(arn.Region) {
			return []Violation{c.v(r, RuleKMSKeyRegion,
				fmt.Sprintf("KMS key is in %s, %s", arn.Region, c.outside()),
				fmt.Sprintf("use a key created in %s", c.firstAllowed()))}
		}
		if awsManagedAlias(arn.Resource) {
			if c.p.RequireCustomerManagedKeys {
				return []Violation{c.v(r, RuleKMSCustomerManaged, fmt.Sprintf("%s is an AWS managed key; the policy requires customer managed keys", arn.Resource), cmkFix)}
			}
			return nil
		}
	} else if awsManagedAlias(r.Value) && c.p.RequireCustomerManagedKeys {
		return []Violation{c.v(r, RuleKMSCustomerManaged, fmt.Sprintf("%s is an AWS managed key; the policy requires customer managed keys", r.Value), cmkFix)}
	}
	// A bare key id or alias name lives in the caller's region, which only the
	// locator knows. Multi-region keys (mrk-) may have replicas elsewhere.
	needLookup := !isARN || c.p.RequireCustomerManagedKeys || strings.Contains(r.Value, "mrk-")
	if !needLookup {
		return nil
	}
	if c.loc == nil {
		return []Violation{c.noLocator(r, "the key's region and manager")}
	}
	f, ok := c.keys[r.Value]
	if !ok {
		f.info, f.err = c.loc.DescribeKey(ctx, r.Value)
		c.keys[r.Value] = f
	}
	if f.err != nil {
		return []Violation{c.v(r, RuleUnverifiable,
			fmt.Sprintf("cannot describe KMS key: %v", f.err),
			fixFor(f.err, "grant kms:DescribeKey on the key to the provider's credentials", "create the key first or check the ARN"))}
	}
	var out []Violation
	if f.info.Region != "" && !c.p.RegionAllowed(f.info.Region) {
		out = append(out, c.v(r, RuleKMSKeyRegion,
			fmt.Sprintf("KMS key is in %s, %s", f.info.Region, c.outside()),
			fmt.Sprintf("use a key created in %s", c.firstAllowed())))
	}
	for _, rr := range f.info.ReplicaRegions {
		if !c.p.RegionAllowed(rr) {
			out = append(out, c.v(r, RuleKMSKeyRegion,
				fmt.Sprintf("multi-region KMS key has a replica in %s, %s", rr, c.outside()),
				fmt.Sprintf("delete the replica in %s (ScheduleKeyDeletion on the replica) or use a single-region key", rr)))
		}
	}
	if c.p.RequireCustomerManagedKeys && !f.info.CustomerManaged {
		out = append(out, c.v(r, RuleKMSCustomerManaged, "the key is AWS managed; the policy requires customer managed keys", cmkFix))
	}
	return out
}

func (c *checker) bucket(ctx context.Context, name string, replication bool) bucketFacts {
	f, ok := c.buckets[name]
	if !ok {
		f.region, f.err = c.loc.BucketRegion(ctx, name)
	}
	if replication && f.err == nil && !f.replDone {
		f.replication, f.replErr = c.loc.BucketReplicationRegions(ctx, name)
		f.replDone = true
	}
	c.buckets[name] = f
	return f
}

func (c *checker) s3(ctx context.Context, r Ref, value string) []Violation {
	s3loc, err := ParseS3URI(value)
	if err != nil {
		return []Violation{c.v(r, RuleUnverifiable, err.Error(), "give an S3 URI such as s3://BUCKET/PREFIX")}
	}
	b := s3loc.Bucket
	if s3loc.ZoneID != "" {
		// A directory bucket lives in the zone its name carries.
		zr := Ref{Path: r.Path, Kind: KindZoneID, Value: s3loc.ZoneID}
		vs := c.zoneID(zr)
		for i := range vs {
			vs[i].Value = r.Value
			vs[i].Msg = fmt.Sprintf("directory bucket %q: %s", b, vs[i].Msg)
		}
		return vs
	}
	if c.loc == nil {
		return []Violation{c.noLocator(r, fmt.Sprintf("the region of bucket %q", b))}
	}
	f := c.bucket(ctx, b, false)
	if f.err != nil {
		return []Violation{c.v(r, RuleUnverifiable,
			fmt.Sprintf("cannot locate bucket %q: %v", b, f.err),
			fixFor(f.err, fmt.Sprintf("grant s3:GetBucketLocation on arn:aws:s3:::%s to the provider's credentials", b), "create the bucket first or check the name"))}
	}
	if !c.p.RegionAllowed(f.region) {
		return []Violation{c.v(r, RuleS3BucketRegion,
			fmt.Sprintf("bucket %q is in %s, %s", b, f.region, c.outside()),
			fmt.Sprintf("create the bucket in %s or point to a bucket there", c.firstAllowed()))}
	}
	f = c.bucket(ctx, b, true)
	if f.replErr != nil {
		return []Violation{c.v(r, RuleUnverifiable,
			fmt.Sprintf("cannot read the replication configuration of bucket %q: %v", b, f.replErr),
			fixFor(f.replErr, fmt.Sprintf("grant s3:GetReplicationConfiguration on arn:aws:s3:::%s to the provider's credentials", b), "check the bucket name"))}
	}
	var out []Violation
	seen := map[string]bool{}
	for _, dest := range f.replication {
		if seen[dest] || c.p.RegionAllowed(dest) {
			continue
		}
		seen[dest] = true
		where := dest
		if where == "" {
			where = "an unknown region"
		}
		out = append(out, c.v(r, RuleS3Replication,
			fmt.Sprintf("bucket %q replicates to %s, %s: replication copies the data out of the jurisdiction", b, where, c.outside()),
			fmt.Sprintf("remove the replication rule to %s, or replicate only to a bucket in %s", where, c.firstAllowed())))
	}
	return out
}

func (c *checker) ecr(r Ref) []Violation {
	img, err := ParseECRImage(r.Value)
	if err != nil {
		return []Violation{c.v(r, RuleNotECR,
			fmt.Sprintf("%v; images must come from Amazon ECR in %s", err, c.firstAllowed()),
			fmt.Sprintf("push the image to an ECR repository in %s (ACCOUNT.dkr.ecr.%s.amazonaws.com/REPO:TAG) and use that URI", c.firstAllowed(), c.example()))}
	}
	if !c.p.RegionAllowed(img.Region) {
		return []Violation{c.v(r, RuleECRImageRegion,
			fmt.Sprintf("image registry is in %s, %s", img.Region, c.outside()),
			fmt.Sprintf("replicate or push the image to ECR in %s and use that URI", c.firstAllowed()))}
	}
	return nil
}

func (c *checker) arn(ctx context.Context, r Ref) []Violation {
	a, err := ParseARN(r.Value)
	if err != nil {
		return []Violation{c.v(r, RuleUnverifiable, err.Error(), "give a full ARN: arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE")}
	}
	if a.Service == "s3" && a.Region == "" && a.Account == "" {
		// A bucket or object ARN: the bucket's location decides.
		return c.s3(ctx, r, r.Value)
	}
	if a.Region == "" || c.p.RegionAllowed(a.Region) {
		return nil
	}
	return []Violation{c.v(r, RuleARNRegion,
		fmt.Sprintf("%s resource is in %s, %s", a.Service, a.Region, c.outside()),
		fmt.Sprintf("use a resource in %s", c.firstAllowed()))}
}

func (c *checker) noLocator(r Ref, what string) Violation {
	return c.v(r, RuleUnverifiable, fmt.Sprintf("no AWS access to look up %s", what), "configure the provider's AWS credentials so the location can be verified")
}

// fixFor picks the fix for a locator error: permissions, existence, or retry.
func fixFor(err error, denied, notFound string) string {
	switch {
	case errors.Is(err, ErrAccessDenied):
		return denied
	case errors.Is(err, ErrNotFound):
		return notFound
	default:
		return "retry once AWS answers; the location must be known before anything is created (" + denied + " if access is the cause)"
	}
}

// CheckTags reports each required tag that is missing or empty in tags. Pass
// the effective tags (provider default_tags merged with the resource's).
func (p *Policy) CheckTags(path string, tags map[string]string) []Violation {
	var out []Violation
	for _, k := range p.RequiredTags {
		if tags[k] != "" {
			continue
		}
		out = append(out, Violation{
			Path:  fmt.Sprintf("%s[%q]", path, k),
			Value: tags[k],
			Rule:  RuleRequiredTag,
			Msg:   fmt.Sprintf("required tag %q is missing or empty", k),
			Fix:   fmt.Sprintf("add %s = \"...\" to %s or to the provider's default_tags", k, path),
		})
	}
	return out
}

// Summarize renders violations for a diagnostic: a count line, then one line
// per violation with its path, value, rule, message and fix. It returns "" for
// none.
func Summarize(vs []Violation) string {
	if len(vs) == 0 {
		return ""
	}
	var b strings.Builder
	if len(vs) == 1 {
		b.WriteString("1 residency violation:")
	} else {
		fmt.Fprintf(&b, "%d residency violations:", len(vs))
	}
	for _, v := range vs {
		fmt.Fprintf(&b, "\n- %s = %q [%s]: %s. Fix: %s.", v.Path, v.Value, v.Rule, v.Msg, v.Fix)
	}
	return b.String()
}

// PolicyInfo is the effective policy as the mlplatform_residency data source
// shows it.
type PolicyInfo struct {
	JurisdictionCode           string
	JurisdictionName           string
	AllowedRegions             []string
	AllowedZoneIDPrefixes      []string // e.g. mec1: zone ids mec1-az* are in an allowed region
	ExcludedZoneIDs            []string
	RequireCustomerManagedKeys bool
	RequiredTags               []string
	Mode                       Mode
}

// Describe returns the effective policy for display. The slices are copies.
func (p *Policy) Describe() PolicyInfo {
	var prefixes []string
	for _, r := range p.AllowedRegions {
		if pre, ok := ZoneIDPrefix(r); ok {
			prefixes = append(prefixes, pre)
		}
	}
	excluded := slices.Clone(p.ExcludedZoneIDs)
	slices.Sort(excluded)
	return PolicyInfo{
		JurisdictionCode:           p.Jurisdiction.Code,
		JurisdictionName:           p.Jurisdiction.Name,
		AllowedRegions:             slices.Clone(p.AllowedRegions),
		AllowedZoneIDPrefixes:      prefixes,
		ExcludedZoneIDs:            excluded,
		RequireCustomerManagedKeys: p.RequireCustomerManagedKeys,
		RequiredTags:               slices.Clone(p.RequiredTags),
		Mode:                       p.Mode,
	}
}
