package residency

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// secretFake is fakeLocator with secrets.
type secretFake struct {
	*fakeLocator
	secrets map[string]SecretInfo
}

func (f *secretFake) DescribeSecret(_ context.Context, arn string) (SecretInfo, error) {
	f.count("DescribeSecret")
	s, ok := f.secrets[arn]
	if !ok {
		return SecretInfo{}, fmt.Errorf("secret %q: %w", arn, ErrNotFound)
	}
	return s, nil
}

const secretPrefix = "arn:aws:secretsmanager:me-central-1:111122223333:secret:"

func TestCheckSecret(t *testing.T) {
	f := &secretFake{fakeLocator: newFake(), secrets: map[string]SecretInfo{
		secretPrefix + "cmk-AbCdEf":       {Region: "me-central-1", KMSKeyID: cmk},
		secretPrefix + "default-AbCdEf":   {Region: "me-central-1"},
		secretPrefix + "euk-AbCdEf":       {Region: "me-central-1", KMSKeyID: euKey},
		secretPrefix + "replicated-AbCdE": {Region: "me-central-1", KMSKeyID: cmk, ReplicaRegions: []string{"eu-west-1"}},
		secretPrefix + "aliased-AbCdEf":   {Region: "me-central-1", KMSKeyID: "alias/uae-cmk"},
	}}
	optOut := PolicyConfig{RequireCustomerManagedKeys: boolp(false)}
	for _, tt := range []struct {
		name  string
		cfg   PolicyConfig
		value string
		rules []string
		msg   string
	}{
		{name: "customer managed key in the region", value: secretPrefix + "cmk-AbCdEf"},
		{name: "alias name resolved in the secret's region", value: secretPrefix + "aliased-AbCdEf"},
		{name: "AWS managed key under the AE default", value: secretPrefix + "default-AbCdEf", rules: []string{RuleKMSCustomerManaged}, msg: "the secret's KMS key"},
		{name: "AWS managed key opted out", cfg: optOut, value: secretPrefix + "default-AbCdEf"},
		{name: "key outside", value: secretPrefix + "euk-AbCdEf", rules: []string{RuleKMSKeyRegion}, msg: "eu-west-1"},
		{name: "replicated outside", value: secretPrefix + "replicated-AbCdE", rules: []string{RuleSecretReplication}, msg: "replicated to eu-west-1"},
		{name: "secret outside", value: "arn:aws:secretsmanager:eu-west-1:111122223333:secret:munge-AbCdEf", rules: []string{RuleARNRegion}},
		{name: "not a secret", value: "arn:aws:s3:::bucket", rules: []string{RuleUnverifiable}, msg: "not a Secrets Manager secret ARN"},
		{name: "missing secret", value: secretPrefix + "gone-AbCdEf", rules: []string{RuleUnverifiable}, msg: "cannot describe the secret"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPolicy(t, tt.cfg)
			vs, err := p.Check(context.Background(), f, []Ref{{Path: "munge", Kind: KindSecret, Value: tt.value}})
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, v := range vs {
				rules = append(rules, v.Rule)
				if v.Value != tt.value || v.Path != "munge" || v.Fix == "" {
					t.Errorf("violation %+v: want the secret's path and value, and a fix", v)
				}
			}
			if !slices.Equal(rules, tt.rules) {
				t.Fatalf("rules = %v, want %v (%v)", rules, tt.rules, vs)
			}
			if tt.msg != "" && !strings.Contains(vs[0].Msg, tt.msg) {
				t.Errorf("message %q lacks %q", vs[0].Msg, tt.msg)
			}
		})
	}
	// A locator that cannot describe secrets fails closed.
	p := mustPolicy(t, PolicyConfig{})
	vs, _ := p.Check(context.Background(), newFake(), []Ref{{Path: "munge", Kind: KindSecret, Value: secretPrefix + "cmk-AbCdEf"}})
	if len(vs) != 1 || vs[0].Rule != RuleUnverifiable {
		t.Fatalf("no secret locator: %v", vs)
	}
}
