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
	RulePartition          = "partition"
	RuleBlank              = "blank-value"
	RuleImageRegion        = "image-region"
	RuleSecretReplication  = "secret-replication"
	// RuleKubeServerRegion: a kubeconfig's API server must be shown to be
	// in the jurisdiction (an address of a VPC of the region, or an AWS
	// name that names an allowed region).
	RuleKubeServerRegion = "kube-server-region"
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
// "unverifiable": the engine fails closed. An empty value is skipped unless
// the reference is Required: an unset optional attribute refers to nothing. A
// blank value (spaces only) is always a violation. The error is for a
// cancelled context only.
//
// Lookups are memoised for the duration of the call only.
func (p *Policy) Check(ctx context.Context, loc Locator, refs []Ref) ([]Violation, error) {
	c := newChecker(p, loc)
	var out []Violation
	for _, r := range refs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("checking residency: %w", err)
		}
		if r.Value == "" && !r.Required && !(r.DefaultKey && p.RequireCustomerManagedKeys) {
			continue
		}
		out = append(out, c.check(ctx, r)...)
	}
	return out, nil
}

func newChecker(p *Policy, loc Locator) *checker {
	return &checker{p: p, loc: loc, buckets: map[string]bucketFacts{}, keys: map[string]keyFacts{}, zones: map[string]zoneFacts{}}
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
	trace   *trace // set by Explain only
}

// trace records, for Explain, what a reference resolved to and which rules
// were evaluated on it.
type trace struct {
	facts []string
	rules []string
}

// fact notes what a reference resolved to (Explain only).
func (c *checker) fact(format string, args ...any) {
	if c.trace != nil {
		c.trace.facts = append(c.trace.facts, fmt.Sprintf(format, args...))
	}
}

// ran notes that a rule was evaluated (Explain only).
func (c *checker) ran(rule string) {
	if c.trace != nil && !slices.Contains(c.trace.rules, rule) {
		c.trace.rules = append(c.trace.rules, rule)
	}
}

// cmkRequired says why customer managed keys are required: the
// jurisdiction's default or the configuration's own setting.
func (c *checker) cmkRequired() string {
	if c.p.Jurisdiction.CustomerManagedKeys {
		return fmt.Sprintf("jurisdiction %s requires customer managed keys by default (%s)", c.p.Jurisdiction.Code, RequireCustomerManagedKeysAttr)
	}
	return fmt.Sprintf("the policy requires customer managed keys (%s = true)", RequireCustomerManagedKeysAttr)
}

// cmkOptOut is the tail of a kms-customer-managed fix: how to accept AWS
// managed keys instead, where that is a choice the configuration made.
func (c *checker) cmkOptOut() string {
	return fmt.Sprintf("; or, to accept AWS managed keys, set %s in the provider configuration", CustomerManagedKeysOptOut)
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
	if strings.TrimSpace(r.Value) == "" {
		return c.blank(r)
	}
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
	case KindImage:
		return c.image(r)
	case KindSecret:
		return c.secret(ctx, r)
	default:
		return []Violation{c.v(r, RuleUnverifiable, fmt.Sprintf("unknown reference kind %q", r.Kind), "report this as a bug in the provider")}
	}
}

func (c *checker) region(r Ref) []Violation {
	c.ran(RuleRegionAllowed)
	if p := RegionPartition(r.Value); p != c.p.Partition() {
		c.fact("partition %s", p)
	}
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
	c.ran(RuleZoneAllowed)
	region, err := ParseZoneName(r.Value)
	if err != nil {
		return []Violation{c.v(r, RuleUnverifiable, err.Error(), fmt.Sprintf("give a zone name such as %sa", c.example()))}
	}
	if !c.p.RegionAllowed(region) {
		return []Violation{c.v(r, RuleZoneAllowed,
			fmt.Sprintf("zone %q is in region %s, %s", r.Value, region, c.outside()),
			fmt.Sprintf("choose a zone in %s", c.firstAllowed()))}
	}
	c.fact("region %s (from the zone name)", region)
	c.ran(RuleZoneExcluded)
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
	c.fact("zone id %s", f.id)
	if !c.p.ZoneIDAllowed(f.id) {
		return []Violation{c.v(r, RuleZoneExcluded,
			fmt.Sprintf("zone %q is zone id %s, which the policy excludes", r.Value, f.id),
			c.excludedFix())}
	}
	return nil
}

func (c *checker) zoneID(r Ref) []Violation {
	c.ran(RuleZoneAllowed)
	if !zoneIDRE().MatchString(r.Value) {
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
	c.fact("region %s (from the zone id)", region)
	c.ran(RuleZoneExcluded)
	if !c.p.ZoneIDAllowed(r.Value) {
		return []Violation{c.v(r, RuleZoneExcluded, fmt.Sprintf("zone id %s is excluded by the policy", r.Value), c.excludedFix())}
	}
	return nil
}

// blank is a reference whose value is empty or spaces only: it refers to
// nothing, so nothing can be verified.
func (c *checker) blank(r Ref) []Violation {
	if r.Kind == KindKMSKey && r.Value == "" && r.DefaultKey && !r.Required {
		c.ran(RuleKMSCustomerManaged)
		if !c.p.RequireCustomerManagedKeys {
			c.fact("no key: AWS uses its managed default key")
			return nil
		}
		return []Violation{c.v(r, RuleKMSCustomerManaged,
			"no KMS key is given, so AWS encrypts with its managed default key; "+c.cmkRequired(),
			fmt.Sprintf("set %s to a customer managed key in %s (aws_kms_key)%s", r.Path, c.firstAllowed(), c.cmkOptOut()))}
	}
	c.ran(RuleBlank)
	return []Violation{c.v(r, RuleBlank,
		"the value is empty or blank: it names no location, so its residency cannot be verified",
		"remove the empty value, or give the location it stands for")}
}

// partition checks that a reference's partition is the jurisdiction's: a
// reference in another partition (aws-cn, aws-us-gov, aws-iso*) is outside
// the jurisdiction by definition, whatever its region or name.
func (c *checker) partition(r Ref, partition string) []Violation {
	c.ran(RulePartition)
	c.fact("partition %s", partition)
	if partition == c.p.Partition() {
		return nil
	}
	return []Violation{c.v(r, RulePartition,
		fmt.Sprintf("the reference is in AWS partition %s; jurisdiction %s lies in partition %s, so it is %s", partition, c.p.Jurisdiction.Code, c.p.Partition(), c.outside()),
		fmt.Sprintf("use a location in partition %s, region %s", c.p.Partition(), c.firstAllowed()))}
}

// awsManagedAlias reports whether an alias name (alias/aws/s3) denotes an
// AWS managed key.
func awsManagedAlias(resource string) bool { return strings.HasPrefix(resource, "alias/aws/") }

func (c *checker) kmsKey(ctx context.Context, r Ref) []Violation {
	cmkFix := fmt.Sprintf("create a customer managed key in %s (aws_kms_key) and reference its ARN%s", c.firstAllowed(), c.cmkOptOut())
	keyRegion := func(region, what string) []Violation {
		c.ran(RuleKMSKeyRegion)
		if region == "" || c.p.RegionAllowed(region) {
			return nil
		}
		return []Violation{c.v(r, RuleKMSKeyRegion,
			fmt.Sprintf("%s is in %s, %s", what, region, c.outside()),
			fmt.Sprintf("use a key created in %s", c.firstAllowed()))}
	}
	resource := r.Value
	isARN := strings.HasPrefix(r.Value, "arn:")
	if isARN {
		arn, err := ParseKMSKeyARN(r.Value)
		if err != nil {
			c.ran(RuleUnverifiable)
			return []Violation{c.v(r, RuleUnverifiable, err.Error(), fmt.Sprintf("give a key ARN such as arn:%s:kms:%s:ACCOUNT:key/KEY-ID", c.p.Partition(), c.example()))}
		}
		if vs := c.partition(r, arn.Partition); len(vs) > 0 {
			return vs
		}
		if arn.Region == "" {
			c.ran(RuleUnverifiable)
			return []Violation{c.v(r, RuleUnverifiable, "the KMS ARN names no region", fmt.Sprintf("give a key ARN such as arn:%s:kms:%s:ACCOUNT:key/KEY-ID", c.p.Partition(), c.example()))}
		}
		c.fact("region %s (from the ARN)", arn.Region)
		if vs := keyRegion(arn.Region, "KMS key"); len(vs) > 0 {
			return vs
		}
		resource = arn.Resource
	}
	if awsManagedAlias(resource) {
		c.fact("AWS managed key (alias/aws/...)")
		c.ran(RuleKMSCustomerManaged)
		if c.p.RequireCustomerManagedKeys {
			return []Violation{c.v(r, RuleKMSCustomerManaged, fmt.Sprintf("%s is an AWS managed key; %s", resource, c.cmkRequired()), cmkFix)}
		}
		if isARN {
			return nil // AWS managed keys are single-region keys of their region
		}
	}
	// A key ARN of a single-region key is decided by its ARN. Everything else
	// is resolved: an alias points to a key that may live anywhere the alias's
	// account can reach, and may be multi-region; a bare key id or alias name
	// lives in the caller's region, which only the locator knows; a
	// multi-region key (mrk-) may have replicas outside.
	isAlias := strings.HasPrefix(resource, "alias/")
	needLookup := !isARN || isAlias || c.p.RequireCustomerManagedKeys || strings.Contains(resource, "mrk-")
	if !needLookup {
		c.fact("single-region key (not mrk-): its ARN decides")
		return nil
	}
	if c.loc == nil {
		c.ran(RuleUnverifiable)
		return []Violation{c.noLocator(r, "the key's region and manager")}
	}
	f, ok := c.keys[r.Value]
	if !ok {
		f.info, f.err = c.loc.DescribeKey(ctx, r.Value)
		c.keys[r.Value] = f
	}
	if f.err != nil {
		c.ran(RuleUnverifiable)
		return []Violation{c.v(r, RuleUnverifiable,
			fmt.Sprintf("cannot describe KMS key: %v", f.err),
			fixFor(f.err, "grant kms:DescribeKey on the key to the provider's credentials", "create the key first or check the ARN"))}
	}
	info := f.info
	if info.ARN != "" && info.ARN != r.Value {
		c.fact("resolves to key %s", info.ARN)
	}
	var out []Violation
	if info.ARN != "" {
		if a, err := ParseARN(info.ARN); err == nil {
			if vs := c.partition(r, a.Partition); len(vs) > 0 {
				return vs
			}
		}
	}
	if info.Region == "" {
		c.ran(RuleUnverifiable)
		return []Violation{c.v(r, RuleUnverifiable, "KMS did not say which region the key is in", "report this as a bug in the provider")}
	}
	c.fact("key region %s", info.Region)
	what := "KMS key"
	if isAlias {
		what = fmt.Sprintf("the key %s points to", resource)
	}
	out = append(out, keyRegion(info.Region, what)...)
	if info.MultiRegion {
		c.fact("multi-region key; other regions: %s", orNone(info.ReplicaRegions))
	}
	for _, rr := range info.ReplicaRegions {
		c.ran(RuleKMSKeyRegion)
		if !c.p.RegionAllowed(rr) {
			out = append(out, c.v(r, RuleKMSKeyRegion,
				fmt.Sprintf("multi-region KMS key has a replica in %s (a replica or its primary), %s: the key material exists there", rr, c.outside()),
				fmt.Sprintf("delete the replica in %s (ScheduleKeyDeletion on the replica) or use a single-region key", rr)))
		}
	}
	c.ran(RuleKMSCustomerManaged)
	c.fact("customer managed: %t", info.CustomerManaged)
	if c.p.RequireCustomerManagedKeys && !info.CustomerManaged {
		out = append(out, c.v(r, RuleKMSCustomerManaged, "the key is AWS managed; "+c.cmkRequired(), cmkFix))
	}
	return out
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
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
		c.ran(RuleUnverifiable)
		return []Violation{c.v(r, RuleUnverifiable, err.Error(), "give an S3 URI such as s3://BUCKET/PREFIX")}
	}
	if vs := c.partition(r, s3loc.Partition); len(vs) > 0 {
		return vs
	}
	if s3loc.EndpointRegion != "" {
		// A bucket answers only at its own region's endpoint: the region a
		// URL or access point ARN names is a fact about the bucket.
		c.ran(RuleS3BucketRegion)
		c.fact("region %s (named in the reference)", s3loc.EndpointRegion)
		if !c.p.RegionAllowed(s3loc.EndpointRegion) {
			return []Violation{c.v(r, RuleS3BucketRegion,
				fmt.Sprintf("the reference names region %s, %s", s3loc.EndpointRegion, c.outside()),
				fmt.Sprintf("create the bucket in %s or point to a bucket there", c.firstAllowed()))}
		}
	}
	if s3loc.Access != "" {
		c.ran(RuleUnverifiable)
		what := fmt.Sprintf("access point %q", s3loc.Access)
		if s3loc.EndpointRegion == "" {
			what = fmt.Sprintf("multi-region access point %q, which routes to buckets in several regions,", s3loc.Access)
		}
		return []Violation{c.v(r, RuleUnverifiable,
			fmt.Sprintf("the bucket behind %s is not named in the reference and the provider does not resolve access points (S3 Control), so the bucket's region and replication cannot be verified", what),
			"reference the bucket itself (s3://BUCKET/PREFIX)")}
	}
	b := s3loc.Bucket
	c.fact("bucket %s", b)
	if s3loc.ZoneID != "" {
		// A directory bucket lives in the zone its name carries.
		c.fact("directory bucket in zone %s", s3loc.ZoneID)
		zr := Ref{Path: r.Path, Kind: KindZoneID, Value: s3loc.ZoneID}
		vs := c.zoneID(zr)
		for i := range vs {
			vs[i].Value = r.Value
			vs[i].Msg = fmt.Sprintf("directory bucket %q: %s", b, vs[i].Msg)
		}
		return vs
	}
	if c.loc == nil {
		c.ran(RuleUnverifiable)
		return []Violation{c.noLocator(r, fmt.Sprintf("the region of bucket %q", b))}
	}
	c.ran(RuleS3BucketRegion)
	f := c.bucket(ctx, b, false)
	if f.err != nil {
		c.ran(RuleUnverifiable)
		return []Violation{c.v(r, RuleUnverifiable,
			fmt.Sprintf("cannot locate bucket %q: %v", b, f.err),
			fixFor(f.err, fmt.Sprintf("grant s3:GetBucketLocation on arn:aws:s3:::%s to the provider's credentials", b), "create the bucket first or check the name"))}
	}
	c.fact("bucket region %s (GetBucketLocation)", f.region)
	if !c.p.RegionAllowed(f.region) {
		return []Violation{c.v(r, RuleS3BucketRegion,
			fmt.Sprintf("bucket %q is in %s, %s", b, f.region, c.outside()),
			fmt.Sprintf("create the bucket in %s or point to a bucket there", c.firstAllowed()))}
	}
	c.ran(RuleS3Replication)
	f = c.bucket(ctx, b, true)
	if f.replErr != nil {
		c.ran(RuleUnverifiable)
		return []Violation{c.v(r, RuleUnverifiable,
			fmt.Sprintf("cannot read the replication configuration of bucket %q: %v", b, f.replErr),
			fixFor(f.replErr, fmt.Sprintf("grant s3:GetReplicationConfiguration on arn:aws:s3:::%s to the provider's credentials", b), "check the bucket name"))}
	}
	c.fact("replicates to: %s", orNone(f.replication))
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
	c.ran(RuleNotECR)
	if err != nil {
		return []Violation{c.v(r, RuleNotECR,
			fmt.Sprintf("%v; images must come from Amazon ECR in %s", err, c.firstAllowed()),
			fmt.Sprintf("push the image to an ECR repository in %s (ACCOUNT.dkr.ecr.%s.amazonaws.com/REPO:TAG) and use that URI", c.firstAllowed(), c.example()))}
	}
	if vs := c.partition(r, img.Partition); len(vs) > 0 {
		return vs
	}
	c.ran(RuleECRImageRegion)
	c.fact("registry region %s (from the host)", img.Region)
	if !c.p.RegionAllowed(img.Region) {
		return []Violation{c.v(r, RuleECRImageRegion,
			fmt.Sprintf("image registry is in %s, %s", img.Region, c.outside()),
			fmt.Sprintf("replicate or push the image to ECR in %s and use that URI", c.firstAllowed()))}
	}
	return nil
}

// globalServices are the services whose ARNs carry no region because the
// resource is not regional. An ARN of any other service without a region
// cannot be placed, and fails closed.
var globalServices = []string{"iam", "sts", "organizations", "route53", "cloudfront", "waf", "shield", "globalaccelerator", "budgets", "ce", "account"}

func (c *checker) arn(ctx context.Context, r Ref) []Violation {
	a, err := ParseARN(r.Value)
	if err != nil {
		c.ran(RuleUnverifiable)
		return []Violation{c.v(r, RuleUnverifiable, err.Error(), "give a full ARN: arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE")}
	}
	if vs := c.partition(r, a.Partition); len(vs) > 0 {
		return vs
	}
	switch {
	case a.Service == "kms":
		// A key or alias: resolved and checked as a key.
		return c.kmsKey(ctx, r)
	case a.Service == "s3" && (a.Region == "" && a.Account == "" || strings.HasPrefix(a.Resource, "accesspoint/")):
		// A bucket, object or access point ARN: the bucket's location decides.
		return c.s3(ctx, r, r.Value)
	case a.Service == "s3-object-lambda":
		c.ran(RuleUnverifiable)
		return []Violation{c.v(r, RuleUnverifiable,
			"an S3 Object Lambda access point fronts a bucket the reference does not name, so the bucket's region and replication cannot be verified",
			"reference the bucket itself (arn:aws:s3:::BUCKET)")}
	case a.Region == "" && slices.Contains(globalServices, a.Service):
		c.ran(RuleARNRegion)
		c.fact("global %s resource (no region)", a.Service)
		return nil
	case a.Region == "":
		c.ran(RuleUnverifiable)
		return []Violation{c.v(r, RuleUnverifiable,
			fmt.Sprintf("the ARN names no region and %s is not a known global service, so where the resource lives cannot be verified", a.Service),
			fmt.Sprintf("give the ARN with its region (%s)", c.firstAllowed()))}
	}
	c.ran(RuleARNRegion)
	c.fact("region %s (from the ARN)", a.Region)
	if c.p.RegionAllowed(a.Region) {
		return nil
	}
	return []Violation{c.v(r, RuleARNRegion,
		fmt.Sprintf("%s resource is in %s, %s", a.Service, a.Region, c.outside()),
		fmt.Sprintf("use a resource in %s", c.firstAllowed()))}
}

// image checks a machine image reference. An AMI id or SSM parameter name is
// resolved by the caller in the provider's region (GetParameter, then
// DescribeImages there), so it can only name an image of that region; the
// ARN forms carry their own partition and region, which must be allowed.
func (c *checker) image(r Ref) []Violation {
	v := strings.TrimPrefix(r.Value, "resolve:ssm:")
	if !strings.HasPrefix(v, "arn:") {
		c.ran(RuleImageRegion)
		if strings.HasPrefix(v, "ami-") {
			c.fact("AMI id: described in the provider's region, where only that region's images exist")
		} else {
			c.fact("SSM parameter name: read in the provider's region; the AMI it holds is described there")
		}
		return nil
	}
	a, err := ParseARN(v)
	if err != nil {
		c.ran(RuleUnverifiable)
		return []Violation{c.v(r, RuleUnverifiable, err.Error(), "give an AMI id (ami-...) or an SSM parameter name")}
	}
	if vs := c.partition(r, a.Partition); len(vs) > 0 {
		return vs
	}
	okRes := a.Service == "ssm" && strings.HasPrefix(a.Resource, "parameter/") || a.Service == "ec2" && strings.HasPrefix(a.Resource, "image/")
	if !okRes || a.Region == "" {
		c.ran(RuleUnverifiable)
		return []Violation{c.v(r, RuleUnverifiable,
			fmt.Sprintf("%q is neither an SSM parameter ARN nor an AMI ARN with a region", v),
			"give an AMI id (ami-...) or an SSM parameter name")}
	}
	c.ran(RuleImageRegion)
	c.fact("region %s (from the ARN)", a.Region)
	if c.p.RegionAllowed(a.Region) {
		return nil
	}
	return []Violation{c.v(r, RuleImageRegion,
		fmt.Sprintf("the image reference is in %s, %s", a.Region, c.outside()),
		fmt.Sprintf("copy the image (or the parameter) to %s and reference it there", c.firstAllowed()))}
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
		if strings.TrimSpace(tags[k]) != "" {
			continue
		}
		out = append(out, Violation{
			Path:  fmt.Sprintf("%s[%q]", path, k),
			Value: tags[k],
			Rule:  RuleRequiredTag,
			Msg:   fmt.Sprintf("required tag %q is missing, empty or blank", k),
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

// RuleVerdict is one rule evaluated on a reference.
type RuleVerdict struct {
	Rule    string
	Verdict string // "pass" or "violation"
}

// Explanation tells what one reference resolved to and which rules it was
// checked against, for a user asking why something is or is not compliant.
type Explanation struct {
	Ref        Ref
	Resolved   []string // what the engine learnt, in order: partition, region, the key an alias points to, replicas, ...
	Rules      []RuleVerdict
	Violations []Violation
}

// Compliant reports whether the reference broke no rule.
func (e Explanation) Compliant() bool { return len(e.Violations) == 0 }

// Explain checks one reference exactly as Check does and records what it
// resolved to and which rules were evaluated. A rule that is not listed was
// not evaluated (it does not apply to the kind, or an earlier violation
// decided the verdict).
func (p *Policy) Explain(ctx context.Context, loc Locator, r Ref) (Explanation, error) {
	if err := ctx.Err(); err != nil {
		return Explanation{}, fmt.Errorf("explaining residency: %w", err)
	}
	c := newChecker(p, loc)
	c.trace = &trace{}
	e := Explanation{Ref: r}
	if r.Value == "" && !r.Required && !(r.DefaultKey && p.RequireCustomerManagedKeys) {
		e.Resolved = []string{"empty: refers to nothing, so no rule applies"}
		return e, nil
	}
	e.Violations = c.check(ctx, r)
	e.Resolved = c.trace.facts
	broken := map[string]bool{}
	for _, v := range e.Violations {
		broken[v.Rule] = true
	}
	for _, rule := range c.trace.rules {
		verdict := "pass"
		if broken[rule] {
			verdict = "violation"
			delete(broken, rule)
		}
		e.Rules = append(e.Rules, RuleVerdict{Rule: rule, Verdict: verdict})
	}
	for _, v := range e.Violations {
		if broken[v.Rule] {
			e.Rules = append(e.Rules, RuleVerdict{Rule: v.Rule, Verdict: "violation"})
			delete(broken, v.Rule)
		}
	}
	return e, nil
}

// secret checks a Secrets Manager secret: its ARN's partition and region,
// the regions it is replicated to (each holds the secret), and the KMS key
// that encrypts it, as a key reference (its region; customer managed when
// the policy requires it: no key means aws/secretsmanager).
func (c *checker) secret(ctx context.Context, r Ref) []Violation {
	a, err := ParseARN(r.Value)
	if err != nil || a.Service != "secretsmanager" || !strings.HasPrefix(a.Resource, "secret:") {
		c.ran(RuleUnverifiable)
		return []Violation{c.v(r, RuleUnverifiable, fmt.Sprintf("%q is not a Secrets Manager secret ARN", r.Value),
			fmt.Sprintf("give the secret's ARN: arn:%s:secretsmanager:%s:ACCOUNT:secret:NAME", c.p.Partition(), c.example()))}
	}
	if vs := c.arn(ctx, Ref{Path: r.Path, Kind: KindARN, Value: r.Value}); len(vs) > 0 {
		return vs
	}
	sl, ok := c.loc.(SecretLocator)
	if c.loc == nil || !ok {
		c.ran(RuleUnverifiable)
		return []Violation{c.noLocator(r, "the secret's replicas and KMS key")}
	}
	info, err := sl.DescribeSecret(ctx, r.Value)
	if err != nil {
		c.ran(RuleUnverifiable)
		return []Violation{c.v(r, RuleUnverifiable, fmt.Sprintf("cannot describe the secret: %v", err),
			fixFor(err, "grant secretsmanager:DescribeSecret on the secret to the provider's credentials", "create the secret first or check the ARN"))}
	}
	var out []Violation
	c.ran(RuleSecretReplication)
	for _, rr := range info.ReplicaRegions {
		if !c.p.RegionAllowed(rr) {
			out = append(out, c.v(r, RuleSecretReplication,
				fmt.Sprintf("the secret is replicated to %s, %s: its value is stored there", rr, c.outside()),
				fmt.Sprintf("remove the replica in %s (RemoveRegionsFromReplication) or use a secret that is not replicated", rr)))
		}
	}
	key := info.KMSKeyID
	if key != "" && !strings.HasPrefix(key, "arn:") {
		// A key id or alias name lives in the secret's region.
		key = fmt.Sprintf("arn:%s:kms:%s:%s:%s", a.Partition, a.Region, a.Account, keyResource(key))
	}
	c.fact("encrypted with %s", orDefault(info.KMSKeyID, "aws/secretsmanager (AWS managed)"))
	kr := Ref{Path: r.Path, Kind: KindKMSKey, Value: key, DefaultKey: true}
	if key == "" {
		out = append(out, c.blank(kr)...)
	} else {
		out = append(out, c.kmsKey(ctx, kr)...)
	}
	for i := range out {
		out[i].Value = r.Value
		if out[i].Rule == RuleKMSCustomerManaged || out[i].Rule == RuleKMSKeyRegion {
			out[i].Msg = "the secret's KMS key: " + out[i].Msg
			out[i].Fix = "encrypt the secret with a customer managed key in " + c.firstAllowed() + " (aws_secretsmanager_secret's kms_key_id)" + c.cmkOptOut()
		}
	}
	return out
}

// keyResource is a bare key id or alias name as the resource of a KMS ARN.
func keyResource(id string) string {
	if strings.HasPrefix(id, "alias/") {
		return id
	}
	return "key/" + id
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
