package residency

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fakeLocator answers from maps and counts calls; a missing entry is
// ErrNotFound.
type fakeLocator struct {
	buckets     map[string]string
	bucketErr   map[string]error
	replication map[string][]string
	replErr     map[string]error
	zones       map[string]string // zone name -> id
	keys        map[string]KeyInfo
	keyErr      map[string]error
	calls       map[string]int
}

func (f *fakeLocator) count(op string) {
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[op]++
}

func (f *fakeLocator) BucketRegion(_ context.Context, bucket string) (string, error) {
	f.count("BucketRegion")
	if err := f.bucketErr[bucket]; err != nil {
		return "", err
	}
	r, ok := f.buckets[bucket]
	if !ok {
		return "", fmt.Errorf("bucket %q: %w", bucket, ErrNotFound)
	}
	return r, nil
}

func (f *fakeLocator) BucketReplicationRegions(_ context.Context, bucket string) ([]string, error) {
	f.count("BucketReplicationRegions")
	if err := f.replErr[bucket]; err != nil {
		return nil, err
	}
	return f.replication[bucket], nil
}

func (f *fakeLocator) ZoneID(_ context.Context, region, zoneName string) (string, error) {
	f.count("ZoneID")
	id, ok := f.zones[zoneName]
	if !ok {
		return "", fmt.Errorf("zone %q in %s: %w", zoneName, region, ErrNotFound)
	}
	return id, nil
}

func (f *fakeLocator) DescribeKey(_ context.Context, key string) (KeyInfo, error) {
	f.count("DescribeKey")
	if err := f.keyErr[key]; err != nil {
		return KeyInfo{}, err
	}
	k, ok := f.keys[key]
	if !ok {
		return KeyInfo{}, fmt.Errorf("key %q: %w", key, ErrNotFound)
	}
	return k, nil
}

const (
	cmk    = "arn:aws:kms:me-central-1:111122223333:key/1111aaaa-0000-0000-0000-000000000001"
	awsKey = "arn:aws:kms:me-central-1:111122223333:key/2222bbbb-0000-0000-0000-000000000002"
	mrk    = "arn:aws:kms:me-central-1:111122223333:key/mrk-0123456789abcdef0123456789abcdef"
	euKey  = "arn:aws:kms:eu-west-1:111122223333:key/3333cccc-0000-0000-0000-000000000003"
	image  = "111122223333.dkr.ecr.me-central-1.amazonaws.com/ml/serve:1.0"
)

func newFake() *fakeLocator {
	return &fakeLocator{
		buckets: map[string]string{
			"uae-data":       "me-central-1",
			"uae-replicated": "me-central-1",
			"uae-repl-local": "me-central-1",
			"eu-data":        "eu-west-1",
			"us-data":        "us-east-1",
		},
		bucketErr: map[string]error{
			"locked": fmt.Errorf("get bucket location: %w", ErrAccessDenied),
			"flaky":  errors.New("connection reset"),
		},
		replication: map[string][]string{
			"uae-replicated": {"eu-central-1", "me-central-1"},
			"uae-repl-local": {"me-central-1"},
		},
		replErr: map[string]error{},
		zones:   map[string]string{"me-central-1a": "mec1-az1", "me-central-1b": "mec1-az2", "me-central-1c": "mec1-az3"},
		keys: map[string]KeyInfo{
			cmk:             {Region: "me-central-1", CustomerManaged: true},
			awsKey:          {Region: "me-central-1", CustomerManaged: false},
			mrk:             {Region: "me-central-1", CustomerManaged: true, ReplicaRegions: []string{"eu-west-1"}},
			"alias/uae-cmk": {Region: "me-central-1", CustomerManaged: true},
			"alias/eu-cmk":  {Region: "eu-west-1", CustomerManaged: true},
			"arn:aws:kms:me-central-1:111122223333:alias/uae-cmk": {Region: "me-central-1", CustomerManaged: true},
		},
		keyErr: map[string]error{
			"arn:aws:kms:me-central-1:111122223333:key/denied": fmt.Errorf("describe key: %w", ErrAccessDenied),
		},
	}
}

func mustPolicy(t *testing.T, cfg PolicyConfig) *Policy {
	t.Helper()
	if cfg.Jurisdiction == "" {
		cfg.Jurisdiction = "AE"
	}
	p, err := NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheck(t *testing.T) {
	strict := PolicyConfig{ExcludedZoneIDs: []string{"mec1-az2"}, RequireCustomerManagedKeys: boolp(true)}
	optOut := PolicyConfig{RequireCustomerManagedKeys: boolp(false)}
	tests := []struct {
		name      string
		cfg       PolicyConfig
		ref       Ref
		wantRules []string
		wantMsg   string // substring of the first violation's Msg
		wantFix   string // substring of the first violation's Fix
	}{
		{name: "region allowed", ref: Ref{Kind: KindRegion, Value: "me-central-1"}},
		{name: "region outside", ref: Ref{Kind: KindRegion, Value: "eu-west-1"}, wantRules: []string{RuleRegionAllowed},
			wantMsg: `region "eu-west-1" is outside jurisdiction AE (allowed regions: me-central-1)`, wantFix: "use me-central-1"},
		{name: "empty value skipped", ref: Ref{Kind: KindRegion, Value: ""}},

		{name: "zone allowed", cfg: strict, ref: Ref{Kind: KindZone, Value: "me-central-1a"}},
		{name: "zone in other region", cfg: strict, ref: Ref{Kind: KindZone, Value: "eu-west-1a"}, wantRules: []string{RuleZoneAllowed},
			wantMsg: "in region eu-west-1, outside jurisdiction AE", wantFix: "choose a zone in me-central-1"},
		{name: "zone excluded by id", cfg: strict, ref: Ref{Kind: KindZone, Value: "me-central-1b"}, wantRules: []string{RuleZoneExcluded},
			wantMsg: "mec1-az2", wantFix: "excluded zone ids: mec1-az2"},
		{name: "zone unresolvable", cfg: strict, ref: Ref{Kind: KindZone, Value: "me-central-1z"}, wantRules: []string{RuleUnverifiable}},
		{name: "zone bad name", ref: Ref{Kind: KindZone, Value: "mec1-az1"}, wantRules: []string{RuleUnverifiable}},

		{name: "zone id allowed", cfg: strict, ref: Ref{Kind: KindZoneID, Value: "mec1-az1"}},
		{name: "zone id excluded", cfg: strict, ref: Ref{Kind: KindZoneID, Value: "mec1-az2"}, wantRules: []string{RuleZoneExcluded}},
		{name: "zone id other region", ref: Ref{Kind: KindZoneID, Value: "euw1-az1"}, wantRules: []string{RuleZoneAllowed},
			wantMsg: "in region eu-west-1", wantFix: "mec1-az*"},
		{name: "zone id unknown prefix", ref: Ref{Kind: KindZoneID, Value: "zzz1-az1"}, wantRules: []string{RuleZoneAllowed}},
		{name: "zone id malformed", ref: Ref{Kind: KindZoneID, Value: "me-central-1a"}, wantRules: []string{RuleUnverifiable}},

		{name: "kms cmk", cfg: strict, ref: Ref{Kind: KindKMSKey, Value: cmk}},
		{name: "kms region", cfg: strict, ref: Ref{Kind: KindKMSKey, Value: euKey}, wantRules: []string{RuleKMSKeyRegion},
			wantMsg: "KMS key is in eu-west-1, outside jurisdiction AE (allowed regions: me-central-1)"},
		{name: "kms aws managed", cfg: strict, ref: Ref{Kind: KindKMSKey, Value: awsKey}, wantRules: []string{RuleKMSCustomerManaged}},
		{name: "kms aws managed allowed when opted out", cfg: optOut, ref: Ref{Kind: KindKMSKey, Value: awsKey}},
		{name: "kms aws managed under the AE default", ref: Ref{Kind: KindKMSKey, Value: awsKey}, wantRules: []string{RuleKMSCustomerManaged},
			wantMsg: "jurisdiction AE requires customer managed keys by default (residency.require_customer_managed_keys)",
			wantFix: "set residency.require_customer_managed_keys = false in the provider configuration"},
		{name: "kms unset under the AE default", ref: KeyRef("attr", ""), wantRules: []string{RuleKMSCustomerManaged},
			wantMsg: "AWS encrypts with its managed default key; jurisdiction AE requires customer managed keys by default",
			wantFix: "set attr to a customer managed key in me-central-1 (aws_kms_key); or, to accept AWS managed keys, set residency.require_customer_managed_keys = false"},
		{name: "kms unset when opted out", cfg: optOut, ref: KeyRef("attr", "")},
		{name: "kms unset when required explicitly", cfg: strict, ref: KeyRef("attr", ""), wantRules: []string{RuleKMSCustomerManaged},
			wantMsg: "requires customer managed keys"},
		{name: "kms aws alias arn", cfg: strict, ref: Ref{Kind: KindKMSKey, Value: "arn:aws:kms:me-central-1:111122223333:alias/aws/s3"}, wantRules: []string{RuleKMSCustomerManaged}},
		{name: "kms aws alias name", cfg: strict, ref: Ref{Kind: KindKMSKey, Value: "alias/aws/s3"}, wantRules: []string{RuleKMSCustomerManaged}},
		// An alias is always resolved, whatever the policy: the key it points
		// to may be anywhere (or multi-region).
		{name: "kms alias arn is resolved even without cmk", ref: Ref{Kind: KindKMSKey, Value: "arn:aws:kms:me-central-1:111122223333:alias/unknown"},
			wantRules: []string{RuleUnverifiable}, wantFix: "create the key first"},
		{name: "kms alias arn resolved", cfg: strict, ref: Ref{Kind: KindKMSKey, Value: "arn:aws:kms:me-central-1:111122223333:alias/uae-cmk"}},
		{name: "kms alias arn unresolvable fails closed", cfg: strict, ref: Ref{Kind: KindKMSKey, Value: "arn:aws:kms:me-central-1:111122223333:alias/unknown"},
			wantRules: []string{RuleUnverifiable}, wantFix: "create the key first"},
		{name: "kms alias arn outside", ref: Ref{Kind: KindKMSKey, Value: "arn:aws:kms:eu-west-1:111122223333:alias/x"}, wantRules: []string{RuleKMSKeyRegion}},
		{name: "kms bare alias resolved", ref: Ref{Kind: KindKMSKey, Value: "alias/uae-cmk"}},
		{name: "kms bare alias elsewhere", ref: Ref{Kind: KindKMSKey, Value: "alias/eu-cmk"}, wantRules: []string{RuleKMSKeyRegion}},
		{name: "kms access denied", cfg: strict, ref: Ref{Kind: KindKMSKey, Value: "arn:aws:kms:me-central-1:111122223333:key/denied"},
			wantRules: []string{RuleUnverifiable}, wantFix: "grant kms:DescribeKey"},
		{name: "kms multi-region replica", ref: Ref{Kind: KindKMSKey, Value: mrk}, wantRules: []string{RuleKMSKeyRegion}, wantMsg: "replica in eu-west-1"},
		{name: "kms not a key arn", ref: Ref{Kind: KindKMSKey, Value: "arn:aws:s3:::bucket"}, wantRules: []string{RuleUnverifiable}},

		{name: "s3 in region", ref: Ref{Kind: KindS3URI, Value: "s3://uae-data/features/"}},
		{name: "s3 outside", ref: Ref{Kind: KindS3URI, Value: "s3://eu-data/x"}, wantRules: []string{RuleS3BucketRegion},
			wantMsg: `bucket "eu-data" is in eu-west-1, outside jurisdiction AE (allowed regions: me-central-1)`,
			wantFix: "create the bucket in me-central-1 or point to a bucket there"},
		{name: "s3 https url", ref: Ref{Kind: KindS3URI, Value: "https://us-data.s3.amazonaws.com/k"}, wantRules: []string{RuleS3BucketRegion}},
		{name: "s3 replication outside", ref: Ref{Kind: KindS3URI, Value: "s3://uae-replicated/x"}, wantRules: []string{RuleS3Replication},
			wantMsg: "replicates to eu-central-1", wantFix: "remove the replication rule"},
		{name: "s3 replication inside", ref: Ref{Kind: KindS3URI, Value: "s3://uae-repl-local/x"}},
		{name: "s3 not found fails closed", ref: Ref{Kind: KindS3URI, Value: "s3://missing-bucket/x"}, wantRules: []string{RuleUnverifiable},
			wantFix: "create the bucket first or check the name"},
		{name: "s3 access denied fails closed", ref: Ref{Kind: KindS3URI, Value: "s3://locked/x"}, wantRules: []string{RuleUnverifiable},
			wantFix: "grant s3:GetBucketLocation on arn:aws:s3:::locked"},
		{name: "s3 other error fails closed", ref: Ref{Kind: KindS3URI, Value: "s3://flaky/x"}, wantRules: []string{RuleUnverifiable}, wantMsg: "connection reset"},
		{name: "s3 malformed", ref: Ref{Kind: KindS3URI, Value: "s3://Bad_Bucket/x"}, wantRules: []string{RuleUnverifiable}},
		{name: "s3 directory bucket in region", ref: Ref{Kind: KindS3URI, Value: "s3://fast--mec1-az1--x-s3/k"}},
		{name: "s3 directory bucket excluded zone", cfg: strict, ref: Ref{Kind: KindS3URI, Value: "s3://fast--mec1-az2--x-s3/k"}, wantRules: []string{RuleZoneExcluded}},
		{name: "s3 directory bucket elsewhere", ref: Ref{Kind: KindS3URI, Value: "s3://fast--use1-az4--x-s3/k"}, wantRules: []string{RuleZoneAllowed}},

		{name: "ecr in region", ref: Ref{Kind: KindECRImage, Value: image}},
		{name: "ecr outside", ref: Ref{Kind: KindECRImage, Value: "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch:2"}, wantRules: []string{RuleECRImageRegion},
			wantMsg: "image registry is in us-east-1, outside jurisdiction AE"},
		{name: "not ecr", ref: Ref{Kind: KindECRImage, Value: "docker.io/library/nginx:1"}, wantRules: []string{RuleNotECR},
			wantFix: "push the image to an ECR repository in me-central-1"},

		{name: "arn in region", ref: Ref{Kind: KindARN, Value: "arn:aws:sagemaker:me-central-1:111122223333:endpoint/e"}},
		{name: "arn global", ref: Ref{Kind: KindARN, Value: "arn:aws:iam::111122223333:role/node"}},
		{name: "arn outside", ref: Ref{Kind: KindARN, Value: "arn:aws:sns:eu-west-1:111122223333:topic"}, wantRules: []string{RuleARNRegion},
			wantMsg: "sns resource is in eu-west-1"},
		{name: "arn bucket is located", ref: Ref{Kind: KindARN, Value: "arn:aws:s3:::eu-data"}, wantRules: []string{RuleS3BucketRegion}},
		{name: "arn malformed", ref: Ref{Kind: KindARN, Value: "not-an-arn"}, wantRules: []string{RuleUnverifiable}},

		{name: "unknown kind", ref: Ref{Kind: "bogus", Value: "x"}, wantRules: []string{RuleUnverifiable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPolicy(t, tt.cfg)
			tt.ref.Path = "attr"
			vs, err := p.Check(context.Background(), newFake(), []Ref{tt.ref})
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, v := range vs {
				rules = append(rules, v.Rule)
				if v.Path != "attr" || v.Value != tt.ref.Value || v.Msg == "" || v.Fix == "" {
					t.Errorf("incomplete violation %+v", v)
				}
			}
			if !slices.Equal(rules, tt.wantRules) {
				t.Fatalf("rules = %v, want %v; violations: %v", rules, tt.wantRules, vs)
			}
			if tt.wantMsg != "" && !strings.Contains(vs[0].Msg, tt.wantMsg) {
				t.Errorf("Msg = %q, want it to contain %q", vs[0].Msg, tt.wantMsg)
			}
			if tt.wantFix != "" && !strings.Contains(vs[0].Fix, tt.wantFix) {
				t.Errorf("Fix = %q, want it to contain %q", vs[0].Fix, tt.wantFix)
			}
		})
	}
}

func TestCheckWithoutLocatorFailsClosed(t *testing.T) {
	p := mustPolicy(t, PolicyConfig{RequireCustomerManagedKeys: boolp(true), ExcludedZoneIDs: []string{"mec1-az2"}})
	refs := []Ref{
		{Path: "a", Kind: KindS3URI, Value: "s3://uae-data/x"},
		{Path: "b", Kind: KindKMSKey, Value: cmk},
		{Path: "c", Kind: KindZone, Value: "me-central-1a"},
		{Path: "d", Kind: KindRegion, Value: "me-central-1"},
	}
	vs, err := p.Check(context.Background(), nil, refs)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 {
		t.Fatalf("got %d violations, want 3: %v", len(vs), vs)
	}
	for _, v := range vs {
		if v.Rule != RuleUnverifiable {
			t.Errorf("%s: rule %s, want unverifiable", v.Path, v.Rule)
		}
	}
}

func TestCheckMemoisesWithinOneCall(t *testing.T) {
	p := mustPolicy(t, PolicyConfig{RequireCustomerManagedKeys: boolp(true)})
	f := newFake()
	refs := []Ref{
		{Path: "a", Kind: KindS3URI, Value: "s3://uae-data/x"},
		{Path: "b", Kind: KindS3URI, Value: "s3://uae-data/y"},
		{Path: "c", Kind: KindARN, Value: "arn:aws:s3:::uae-data/z"},
		{Path: "d", Kind: KindKMSKey, Value: cmk},
		{Path: "e", Kind: KindKMSKey, Value: cmk},
	}
	vs, err := p.Check(context.Background(), f, refs)
	if err != nil || len(vs) != 0 {
		t.Fatalf("Check = %v, %v", vs, err)
	}
	want := map[string]int{"BucketRegion": 1, "BucketReplicationRegions": 1, "DescribeKey": 1}
	for op, n := range want {
		if f.calls[op] != n {
			t.Errorf("%s called %d times, want %d", op, f.calls[op], n)
		}
	}
	// A second call asks again: nothing is cached between calls.
	if _, err := p.Check(context.Background(), f, refs[:1]); err != nil {
		t.Fatal(err)
	}
	if f.calls["BucketRegion"] != 2 {
		t.Errorf("BucketRegion called %d times after a second Check, want 2", f.calls["BucketRegion"])
	}
}

func TestCheckReplicationErrorFailsClosed(t *testing.T) {
	p := mustPolicy(t, PolicyConfig{})
	f := newFake()
	f.replErr["uae-data"] = fmt.Errorf("get bucket replication: %w", ErrAccessDenied)
	vs, err := p.Check(context.Background(), f, []Ref{{Path: "a", Kind: KindS3URI, Value: "s3://uae-data/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Rule != RuleUnverifiable || !strings.Contains(vs[0].Fix, "s3:GetReplicationConfiguration") {
		t.Fatalf("violations = %v", vs)
	}
}

func TestCheckCancelled(t *testing.T) {
	p := mustPolicy(t, PolicyConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Check(ctx, newFake(), []Ref{{Kind: KindRegion, Value: "me-central-1"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCheckTags(t *testing.T) {
	p := mustPolicy(t, PolicyConfig{RequiredTags: []string{"owner", "cost-center"}})
	tests := []struct {
		name string
		tags map[string]string
		want []string // paths
	}{
		{name: "all present", tags: map[string]string{"owner": "ml", "cost-center": "42"}},
		{name: "one missing", tags: map[string]string{"owner": "ml"}, want: []string{`tags["cost-center"]`}},
		{name: "empty value", tags: map[string]string{"owner": "", "cost-center": "42"}, want: []string{`tags["owner"]`}},
		{name: "nil", want: []string{`tags["owner"]`, `tags["cost-center"]`}},
		{name: "case matters", tags: map[string]string{"Owner": "ml", "cost-center": "42"}, want: []string{`tags["owner"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range p.CheckTags("tags", tt.tags) {
				if v.Rule != RuleRequiredTag || v.Fix == "" {
					t.Errorf("bad violation %+v", v)
				}
				got = append(got, v.Path)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("paths = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	if got := Summarize(nil); got != "" {
		t.Fatalf("Summarize(nil) = %q", got)
	}
	vs := []Violation{
		{Path: "offline_store.s3_uri", Value: "s3://eu-data/x", Rule: RuleS3BucketRegion, Msg: "bucket is in eu-west-1", Fix: "move it"},
		{Path: "region", Value: "eu-west-1", Rule: RuleRegionAllowed, Msg: "outside", Fix: "use me-central-1"},
	}
	got := Summarize(vs)
	for _, want := range []string{"2 residency violations:", `- offline_store.s3_uri = "s3://eu-data/x" [s3-bucket-region]: bucket is in eu-west-1. Fix: move it.`, "[region-allowed]"} {
		if !strings.Contains(got, want) {
			t.Errorf("Summarize() = %q, want it to contain %q", got, want)
		}
	}
	if got := Summarize(vs[:1]); !strings.HasPrefix(got, "1 residency violation:") {
		t.Errorf("Summarize(one) = %q", got)
	}
}

func TestDescribe(t *testing.T) {
	p := mustPolicy(t, PolicyConfig{ExcludedZoneIDs: []string{"mec1-az2"}, Mode: ModeAudit, RequireCustomerManagedKeys: boolp(true)})
	d := p.Describe()
	if d.JurisdictionCode != "AE" || d.JurisdictionName != "United Arab Emirates" || d.Mode != ModeAudit || !d.RequireCustomerManagedKeys {
		t.Fatalf("Describe() = %+v", d)
	}
	if !slices.Equal(d.AllowedRegions, []string{"me-central-1"}) || !slices.Equal(d.AllowedZoneIDPrefixes, []string{"mec1"}) || !slices.Equal(d.ExcludedZoneIDs, []string{"mec1-az2"}) {
		t.Fatalf("Describe() = %+v", d)
	}
	d.AllowedRegions[0] = "changed"
	if p.AllowedRegions[0] != "me-central-1" {
		t.Fatal("Describe shares its slices with the policy")
	}
	if p.Enforcing() {
		t.Error("audit policy reports Enforcing")
	}
}

func TestNewPolicyRejectsZoneNamesAsExcludedIDs(t *testing.T) {
	_, err := NewPolicy(PolicyConfig{Jurisdiction: "AE", ExcludedZoneIDs: []string{"mec1-az1", "me-central-1b"}})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Path != "residency.excluded_zone_ids[1]" {
		t.Fatalf("err = %v, want ConfigError at residency.excluded_zone_ids[1]", err)
	}
}

func boolp(b bool) *bool { return &b }

// TestCustomerManagedKeysDefault: require_customer_managed_keys follows the
// jurisdiction when unset (true for AE); an explicit false is kept and
// marked as an opt-out, so the front ends can warn.
func TestCustomerManagedKeysDefault(t *testing.T) {
	for _, tc := range []struct {
		name          string
		set           *bool
		want, wantOpt bool
	}{
		{name: "unset: the jurisdiction's default", want: true},
		{name: "explicit true", set: boolp(true), want: true},
		{name: "explicit false: an opt-out", set: boolp(false), want: false, wantOpt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPolicy(t, PolicyConfig{Jurisdiction: "AE", RequireCustomerManagedKeys: tc.set})
			if p.RequireCustomerManagedKeys != tc.want || p.CustomerManagedKeysOptOut != tc.wantOpt {
				t.Errorf("RequireCustomerManagedKeys, CustomerManagedKeysOptOut = %t, %t; want %t, %t", p.RequireCustomerManagedKeys, p.CustomerManagedKeysOptOut, tc.want, tc.wantOpt)
			}
			if got := p.Describe().RequireCustomerManagedKeys; got != tc.want {
				t.Errorf("Describe().RequireCustomerManagedKeys = %t, want %t", got, tc.want)
			}
		})
	}
	j, _ := LookupJurisdiction("AE")
	if !j.CustomerManagedKeys {
		t.Error("jurisdiction AE does not require customer managed keys by default")
	}
}
