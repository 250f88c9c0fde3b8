package residency

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// The conformance suite: a case per rule and per reference form. Each case
// is one reference checked against one policy with a fake locator (a test
// double: the real locator is tested against moto in internal/cloud and
// through the provider's acceptance matrix). wantRules empty means
// compliant; noLookup asserts the verdict came without asking AWS (facts
// such as partitions and a URL's region are not looked up by name).

const (
	cfKey        = "arn:aws:kms:me-central-1:111122223333:key/1111aaaa-0000-0000-0000-000000000001"
	cfKeyID      = "1111aaaa-0000-0000-0000-000000000001"
	cfAWSKey     = "arn:aws:kms:me-central-1:111122223333:key/2222bbbb-0000-0000-0000-000000000002"
	cfMRKOut     = "arn:aws:kms:me-central-1:111122223333:key/mrk-0000000000000000000000000000000a"
	cfMRKIn      = "arn:aws:kms:me-central-1:111122223333:key/mrk-0000000000000000000000000000000b"
	cfAliasMRK   = "arn:aws:kms:me-central-1:111122223333:alias/training"
	cfAliasCMK   = "arn:aws:kms:me-central-1:111122223333:alias/ok"
	cfEUKey      = "arn:aws:kms:eu-west-1:111122223333:key/3333cccc-0000-0000-0000-000000000003"
	cfCNKey      = "arn:aws-cn:kms:me-central-1:111122223333:key/1111aaaa-0000-0000-0000-000000000001"
	cfGovKey     = "arn:aws-us-gov:kms:us-gov-west-1:111122223333:key/1111aaaa-0000-0000-0000-000000000001"
	cfUAEBucket  = "uae-data"
	cfReplBucket = "uae-replicated"
)

func conformanceLocator() *fakeLocator {
	cmkInfo := KeyInfo{ARN: cfKey, Region: "me-central-1", CustomerManaged: true}
	mrkOut := KeyInfo{ARN: cfMRKOut, Region: "me-central-1", CustomerManaged: true, MultiRegion: true, ReplicaRegions: []string{"eu-west-1"}}
	return &fakeLocator{
		buckets: map[string]string{
			cfUAEBucket: "me-central-1", "eu-data": "eu-west-1", cfReplBucket: "me-central-1",
			"name": "me-central-1", // a same-named bucket in the UAE: the partition attack
		},
		replication: map[string][]string{cfReplBucket: {"eu-west-1"}},
		zones:       map[string]string{"me-central-1a": "mec1-az1", "me-central-1b": "mec1-az2"},
		keys: map[string]KeyInfo{
			cfKey:                                  cmkInfo,
			cfKeyID:                                cmkInfo,
			cfAliasCMK:                             cmkInfo,
			"alias/ok":                             cmkInfo,
			cfAWSKey:                               {ARN: cfAWSKey, Region: "me-central-1"},
			"alias/aws/s3":                         {ARN: cfAWSKey, Region: "me-central-1"},
			cfMRKOut:                               mrkOut,
			cfAliasMRK:                             mrkOut,
			"alias/training":                       mrkOut,
			cfMRKIn:                                {ARN: cfMRKIn, Region: "me-central-1", CustomerManaged: true, MultiRegion: true},
			"alias/to-eu":                          {ARN: cfEUKey, Region: "eu-west-1", CustomerManaged: true},
			"alias/to-cn":                          {ARN: cfCNKey, Region: "me-central-1", CustomerManaged: true},
			"mrk-0000000000000000000000000000000a": mrkOut,
		},
		keyErr: map[string]error{"alias/denied": fmt.Errorf("describing: %w", ErrAccessDenied)},
	}
}

type conformanceCase struct {
	name      string
	ref       Ref
	cmk       bool     // require_customer_managed_keys
	wantRules []string // rules broken; empty: compliant
	noLookup  bool     // decided without any locator call
}

func conformanceCases() []conformanceCase {
	ref := func(k Kind, v string) Ref { return Ref{Path: "p", Kind: k, Value: v} }
	return []conformanceCase{
		// Regions, by partition.
		{name: "region/allowed", ref: ref(KindRegion, "me-central-1"), noLookup: true},
		{name: "region/other", ref: ref(KindRegion, "eu-west-1"), wantRules: []string{RuleRegionAllowed}, noLookup: true},
		{name: "region/aws-cn", ref: ref(KindRegion, "cn-north-1"), wantRules: []string{RuleRegionAllowed}, noLookup: true},
		{name: "region/aws-us-gov", ref: ref(KindRegion, "us-gov-west-1"), wantRules: []string{RuleRegionAllowed}, noLookup: true},
		{name: "region/aws-iso", ref: ref(KindRegion, "us-iso-east-1"), wantRules: []string{RuleRegionAllowed}, noLookup: true},

		// Zones: names (resolved to ids) and ids.
		{name: "zone/allowed", ref: ref(KindZone, "me-central-1a")},
		{name: "zone/excluded by id", ref: ref(KindZone, "me-central-1b"), wantRules: []string{RuleZoneExcluded}},
		{name: "zone/other region", ref: ref(KindZone, "eu-west-1a"), wantRules: []string{RuleZoneAllowed}, noLookup: true},
		{name: "zone/unknown name", ref: ref(KindZone, "me-central-1z"), wantRules: []string{RuleUnverifiable}},
		{name: "zone/not a zone", ref: ref(KindZone, "bogus"), wantRules: []string{RuleUnverifiable}, noLookup: true},
		{name: "zone id/allowed", ref: ref(KindZoneID, "mec1-az1"), noLookup: true},
		{name: "zone id/excluded", ref: ref(KindZoneID, "mec1-az2"), wantRules: []string{RuleZoneExcluded}, noLookup: true},
		{name: "zone id/other region", ref: ref(KindZoneID, "euw1-az1"), wantRules: []string{RuleZoneAllowed}, noLookup: true},
		{name: "zone id/unknown prefix", ref: ref(KindZoneID, "xyz1-az1"), wantRules: []string{RuleZoneAllowed}, noLookup: true},

		// KMS keys: ARN, alias ARN, alias name, key id, multi-region keys, partitions.
		{name: "kms/key arn", ref: ref(KindKMSKey, cfKey), noLookup: true},
		{name: "kms/key arn other region", ref: ref(KindKMSKey, cfEUKey), wantRules: []string{RuleKMSKeyRegion}, noLookup: true},
		{name: "kms/key arn aws-cn", ref: ref(KindKMSKey, cfCNKey), wantRules: []string{RulePartition}, noLookup: true},
		{name: "kms/key arn aws-us-gov", ref: ref(KindKMSKey, cfGovKey), wantRules: []string{RulePartition}, noLookup: true},
		{name: "kms/alias arn to mrk with replica outside", ref: ref(KindKMSKey, cfAliasMRK), wantRules: []string{RuleKMSKeyRegion}},
		{name: "kms/alias arn to cmk", ref: ref(KindKMSKey, cfAliasCMK)},
		{name: "kms/alias name to mrk with replica outside", ref: ref(KindKMSKey, "alias/training"), wantRules: []string{RuleKMSKeyRegion}},
		{name: "kms/alias name to key in other region", ref: ref(KindKMSKey, "alias/to-eu"), wantRules: []string{RuleKMSKeyRegion}},
		{name: "kms/alias name to key in other partition", ref: ref(KindKMSKey, "alias/to-cn"), wantRules: []string{RulePartition}},
		{name: "kms/alias name to cmk", ref: ref(KindKMSKey, "alias/ok")},
		{name: "kms/alias not found", ref: ref(KindKMSKey, "alias/missing"), wantRules: []string{RuleUnverifiable}},
		{name: "kms/alias access denied", ref: ref(KindKMSKey, "alias/denied"), wantRules: []string{RuleUnverifiable}},
		{name: "kms/key id", ref: ref(KindKMSKey, cfKeyID)},
		{name: "kms/mrk id with replica outside", ref: ref(KindKMSKey, "mrk-0000000000000000000000000000000a"), wantRules: []string{RuleKMSKeyRegion}},
		{name: "kms/mrk arn with replica outside", ref: ref(KindKMSKey, cfMRKOut), wantRules: []string{RuleKMSKeyRegion}},
		{name: "kms/mrk arn replicas inside", ref: ref(KindKMSKey, cfMRKIn)},
		{name: "kms/aws managed alias arn, cmk required", ref: ref(KindKMSKey, "arn:aws:kms:me-central-1:111122223333:alias/aws/s3"), cmk: true, wantRules: []string{RuleKMSCustomerManaged}, noLookup: true},
		{name: "kms/aws managed alias arn, cmk not required", ref: ref(KindKMSKey, "arn:aws:kms:me-central-1:111122223333:alias/aws/s3"), noLookup: true},
		{name: "kms/aws managed key arn, cmk required", ref: ref(KindKMSKey, cfAWSKey), cmk: true, wantRules: []string{RuleKMSCustomerManaged}},
		{name: "kms/cmk arn, cmk required", ref: ref(KindKMSKey, cfKey), cmk: true},
		{name: "kms/not a key arn", ref: ref(KindKMSKey, "arn:aws:s3:::uae-data"), wantRules: []string{RuleUnverifiable}, noLookup: true},
		{name: "kms/absent, cmk required", ref: KeyRef("kms_key_arn", ""), cmk: true, wantRules: []string{RuleKMSCustomerManaged}, noLookup: true},
		{name: "kms/absent, cmk not required", ref: KeyRef("kms_key_arn", ""), noLookup: true},

		// S3: URI, ARN, URL styles, access points, directory buckets, partitions.
		{name: "s3/uri", ref: ref(KindS3URI, "s3://uae-data/features/")},
		{name: "s3/uri other region", ref: ref(KindS3URI, "s3://eu-data/x"), wantRules: []string{RuleS3BucketRegion}},
		{name: "s3/uri replicates out", ref: ref(KindS3URI, "s3://uae-replicated/x"), wantRules: []string{RuleS3Replication}},
		{name: "s3/uri missing bucket", ref: ref(KindS3URI, "s3://missing-bucket/x"), wantRules: []string{RuleUnverifiable}},
		{name: "s3/not s3", ref: ref(KindS3URI, "gs://bucket/x"), wantRules: []string{RuleUnverifiable}, noLookup: true},
		{name: "s3/bucket arn", ref: ref(KindS3URI, "arn:aws:s3:::uae-data/k")},
		{name: "s3/bucket arn aws-cn", ref: ref(KindS3URI, "arn:aws-cn:s3:::name"), wantRules: []string{RulePartition}, noLookup: true},
		{name: "s3/virtual-hosted url", ref: ref(KindS3URI, "https://uae-data.s3.me-central-1.amazonaws.com/k")},
		{name: "s3/path-style url", ref: ref(KindS3URI, "https://s3.me-central-1.amazonaws.com/uae-data/k")},
		{name: "s3/dualstack url", ref: ref(KindS3URI, "https://uae-data.s3.dualstack.me-central-1.amazonaws.com/k")},
		{name: "s3/url naming another region", ref: ref(KindS3URI, "https://uae-data.s3.eu-west-1.amazonaws.com/k"), wantRules: []string{RuleS3BucketRegion}, noLookup: true},
		{name: "s3/url in aws-cn", ref: ref(KindS3URI, "https://name.s3.cn-north-1.amazonaws.com.cn/k"), wantRules: []string{RulePartition}, noLookup: true},
		{name: "s3/url on cn host naming an allowed region", ref: ref(KindS3URI, "https://name.s3.me-central-1.amazonaws.com.cn/k"), wantRules: []string{RulePartition}, noLookup: true},
		{name: "s3/url in aws-us-gov", ref: ref(KindS3URI, "https://name.s3.us-gov-west-1.amazonaws.com/k"), wantRules: []string{RulePartition}, noLookup: true},
		{name: "s3/access point", ref: ref(KindS3URI, "arn:aws:s3:me-central-1:111122223333:accesspoint/ap"), wantRules: []string{RuleUnverifiable}, noLookup: true},
		{name: "s3/access point other region", ref: ref(KindS3URI, "arn:aws:s3:eu-west-1:111122223333:accesspoint/ap"), wantRules: []string{RuleS3BucketRegion}, noLookup: true},
		{name: "s3/multi-region access point", ref: ref(KindS3URI, "arn:aws:s3::111122223333:accesspoint/mfzwi23gnjvgw.mrap"), wantRules: []string{RuleUnverifiable}, noLookup: true},
		{name: "s3/directory bucket", ref: ref(KindS3URI, "s3://fast--mec1-az1--x-s3/k"), noLookup: true},
		{name: "s3/directory bucket excluded zone", ref: ref(KindS3URI, "s3://fast--mec1-az2--x-s3/k"), wantRules: []string{RuleZoneExcluded}, noLookup: true},

		// ECR images: host styles and partitions.
		{name: "ecr/in region", ref: ref(KindECRImage, "111122223333.dkr.ecr.me-central-1.amazonaws.com/ml/serve:1.0"), noLookup: true},
		{name: "ecr/dual-stack host", ref: ref(KindECRImage, "111122223333.dkr-ecr.me-central-1.on.aws/ml/serve:1.0"), noLookup: true},
		{name: "ecr/other region", ref: ref(KindECRImage, "111122223333.dkr.ecr.us-east-1.amazonaws.com/ml/serve:1.0"), wantRules: []string{RuleECRImageRegion}, noLookup: true},
		{name: "ecr/cn host naming an allowed region", ref: ref(KindECRImage, "111122223333.dkr.ecr.me-central-1.amazonaws.com.cn/ml/serve:1.0"), wantRules: []string{RulePartition}, noLookup: true},
		{name: "ecr/aws-cn", ref: ref(KindECRImage, "111122223333.dkr.ecr.cn-north-1.amazonaws.com.cn/ml/serve:1.0"), wantRules: []string{RulePartition}, noLookup: true},
		{name: "ecr/public registry", ref: ref(KindECRImage, "docker.io/library/nginx:latest"), wantRules: []string{RuleNotECR}, noLookup: true},

		// Any ARN: global, regional, partitions, and resolved indirections.
		{name: "arn/iam role (global)", ref: ref(KindARN, "arn:aws:iam::111122223333:role/sagemaker"), noLookup: true},
		{name: "arn/regional allowed", ref: ref(KindARN, "arn:aws:sagemaker:me-central-1:111122223333:feature-group/clicks"), noLookup: true},
		{name: "arn/regional other region", ref: ref(KindARN, "arn:aws:sagemaker:eu-west-1:111122223333:feature-group/clicks"), wantRules: []string{RuleARNRegion}, noLookup: true},
		{name: "arn/iam aws-cn", ref: ref(KindARN, "arn:aws-cn:iam::111122223333:role/x"), wantRules: []string{RulePartition}, noLookup: true},
		{name: "arn/aws-us-gov", ref: ref(KindARN, "arn:aws-us-gov:sagemaker:us-gov-west-1:111122223333:model/x"), wantRules: []string{RulePartition}, noLookup: true},
		{name: "arn/aws-iso", ref: ref(KindARN, "arn:aws-iso:sagemaker:us-iso-east-1:111122223333:model/x"), wantRules: []string{RulePartition}, noLookup: true},
		{name: "arn/regional service without region", ref: ref(KindARN, "arn:aws:sagemaker::111122223333:model/x"), wantRules: []string{RuleUnverifiable}, noLookup: true},
		{name: "arn/kms alias to mrk with replica outside", ref: ref(KindARN, cfAliasMRK), wantRules: []string{RuleKMSKeyRegion}},
		{name: "arn/kms key other region", ref: ref(KindARN, cfEUKey), wantRules: []string{RuleKMSKeyRegion}, noLookup: true},
		{name: "arn/kms key", ref: ref(KindARN, cfKey), noLookup: true},
		{name: "arn/bucket other region", ref: ref(KindARN, "arn:aws:s3:::eu-data"), wantRules: []string{RuleS3BucketRegion}},
		{name: "arn/bucket replicates out", ref: ref(KindARN, "arn:aws:s3:::uae-replicated"), wantRules: []string{RuleS3Replication}},
		{name: "arn/access point", ref: ref(KindARN, "arn:aws:s3:me-central-1:111122223333:accesspoint/ap"), wantRules: []string{RuleUnverifiable}, noLookup: true},
		{name: "arn/multi-region access point", ref: ref(KindARN, "arn:aws:s3::111122223333:accesspoint/x.mrap"), wantRules: []string{RuleUnverifiable}, noLookup: true},
		{name: "arn/object lambda access point", ref: ref(KindARN, "arn:aws:s3-object-lambda:me-central-1:111122223333:accesspoint/ol"), wantRules: []string{RuleUnverifiable}, noLookup: true},
		{name: "arn/malformed", ref: ref(KindARN, "arn:aws:sagemaker"), wantRules: []string{RuleUnverifiable}, noLookup: true},

		// Machine images: AMI ids and SSM parameters (resolved in the provider's region).
		{name: "image/ami id", ref: ref(KindImage, "ami-0123456789abcdef0"), noLookup: true},
		{name: "image/ssm name", ref: ref(KindImage, "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"), noLookup: true},
		{name: "image/ssm arn", ref: ref(KindImage, "resolve:ssm:arn:aws:ssm:me-central-1:111122223333:parameter/gpu-ami"), noLookup: true},
		{name: "image/ssm arn other region", ref: ref(KindImage, "resolve:ssm:arn:aws:ssm:eu-west-1:111122223333:parameter/gpu-ami"), wantRules: []string{RuleImageRegion}, noLookup: true},
		{name: "image/ssm arn aws-cn", ref: ref(KindImage, "arn:aws-cn:ssm:cn-north-1:111122223333:parameter/gpu-ami"), wantRules: []string{RulePartition}, noLookup: true},
		{name: "image/ami arn other region", ref: ref(KindImage, "arn:aws:ec2:eu-west-1::image/ami-0123456789abcdef0"), wantRules: []string{RuleImageRegion}, noLookup: true},
		{name: "image/other arn", ref: ref(KindImage, "arn:aws:s3:::uae-data"), wantRules: []string{RuleUnverifiable}, noLookup: true},

		// Blanks and unknowns.
		{name: "blank/required empty", ref: Ref{Path: "arns[0]", Kind: KindARN, Required: true}, wantRules: []string{RuleBlank}, noLookup: true},
		{name: "blank/spaces", ref: ref(KindS3URI, "  "), wantRules: []string{RuleBlank}, noLookup: true},
		{name: "blank/spaces in a key", ref: KeyRef("kms_key_arn", " "), wantRules: []string{RuleBlank}, noLookup: true},
		{name: "blank/optional empty", ref: ref(KindS3URI, ""), noLookup: true},
		{name: "unknown/kind", ref: ref(Kind("bucket_policy"), "x"), wantRules: []string{RuleUnverifiable}, noLookup: true},
	}
}

func TestConformance(t *testing.T) {
	for _, tc := range conformanceCases() {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPolicy(PolicyConfig{Jurisdiction: "AE", ExcludedZoneIDs: []string{"mec1-az2"}, RequireCustomerManagedKeys: boolp(tc.cmk)})
			if err != nil {
				t.Fatal(err)
			}
			loc := conformanceLocator()
			vs, err := p.Check(context.Background(), loc, []Ref{tc.ref})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range vs {
				if v.Path != tc.ref.Path || v.Msg == "" || v.Fix == "" {
					t.Errorf("violation %+v lacks its path, message or fix", v)
				}
				if !slices.Contains(got, v.Rule) {
					got = append(got, v.Rule)
				}
			}
			if !slices.Equal(got, tc.wantRules) {
				t.Fatalf("Check(%s %q) broke %v, want %v:\n%s", tc.ref.Kind, tc.ref.Value, got, tc.wantRules, Summarize(vs))
			}
			if tc.noLookup && len(loc.calls) > 0 {
				t.Errorf("Check(%q) asked AWS %v; the verdict must come from the reference itself", tc.ref.Value, loc.calls)
			}
			// Explain agrees with Check, and lists every broken rule.
			e, err := p.Explain(context.Background(), conformanceLocator(), tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			if e.Compliant() != (len(tc.wantRules) == 0) {
				t.Errorf("Explain compliant = %v, Check broke %v", e.Compliant(), got)
			}
			for _, rule := range tc.wantRules {
				if !slices.Contains(e.Rules, RuleVerdict{Rule: rule, Verdict: "violation"}) {
					t.Errorf("Explain rules %v do not show %s as a violation", e.Rules, rule)
				}
			}
			if len(tc.wantRules) == 0 && tc.ref.Value != "" && len(e.Rules) == 0 {
				t.Errorf("Explain of a compliant %s lists no rule it passed", tc.ref.Kind)
			}
		})
	}
}

// Every rule the engine can break has at least one violating case.
func TestConformanceCoversEveryRule(t *testing.T) {
	rules := []string{RuleRegionAllowed, RuleZoneAllowed, RuleZoneExcluded, RuleKMSKeyRegion, RuleKMSCustomerManaged,
		RuleS3BucketRegion, RuleS3Replication, RuleECRImageRegion, RuleARNRegion, RuleUnverifiable, RuleNotECR,
		RulePartition, RuleBlank, RuleImageRegion}
	covered := map[string]bool{}
	for _, tc := range conformanceCases() {
		for _, r := range tc.wantRules {
			covered[r] = true
		}
	}
	for _, r := range rules {
		if !covered[r] {
			t.Errorf("no conformance case breaks rule %s", r)
		}
	}
}

func TestExplainAliasToMultiRegionKey(t *testing.T) {
	p, err := NewPolicy(PolicyConfig{Jurisdiction: "AE"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.Explain(context.Background(), conformanceLocator(), Ref{Path: "p", Kind: KindKMSKey, Value: cfAliasMRK})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"partition aws", "region me-central-1 (from the ARN)", "resolves to key " + cfMRKOut, "multi-region key; other regions: eu-west-1"} {
		if !slices.Contains(e.Resolved, want) {
			t.Errorf("Explain resolved %q, want it to include %q", e.Resolved, want)
		}
	}
	if e.Compliant() {
		t.Error("Explain says compliant; the key has a replica in eu-west-1")
	}
}

func TestCheckTagsBlankIsAbsent(t *testing.T) {
	p, err := NewPolicy(PolicyConfig{Jurisdiction: "AE", RequiredTags: []string{"owner"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"", " ", "\t "} {
		if vs := p.CheckTags("tags", map[string]string{"owner": v}); len(vs) != 1 || vs[0].Rule != RuleRequiredTag {
			t.Errorf("CheckTags(owner = %q) = %v, want one required-tag violation", v, vs)
		}
	}
	if vs := p.CheckTags("tags", map[string]string{"owner": "ml"}); len(vs) != 0 {
		t.Errorf("CheckTags(owner = ml) = %v, want none", vs)
	}
}

func TestNewPolicyRejectsBlankRequiredTag(t *testing.T) {
	_, err := NewPolicy(PolicyConfig{Jurisdiction: "AE", RequiredTags: []string{"owner", " "}})
	var ce *ConfigError
	if err == nil || !errors.As(err, &ce) || ce.Path != "residency.required_tags[1]" {
		t.Fatalf("NewPolicy with a blank required tag = %v, want a ConfigError at residency.required_tags[1]", err)
	}
}
