package pulumi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
)

// The residency matrix through the Pulumi provider's Check (the call the
// engine makes before any create), served by pulumi-go-provider's
// integration server against moto: the same classes as the Terraform
// matrix (provider/residency_matrix_test.go), for the resources Pulumi
// serves. Every violating case fails Check on its property with its rule,
// every compliant case passes Check and a preview create, and nothing is
// written.

type pulumiMatrixCase struct {
	name      string
	residency map[string]property.Value // provider residency settings beyond the jurisdiction
	typ       string
	inputs    property.Map
	property  string // property of the failure; "" = compliant
	rule      string
}

func TestResidencyMatrix(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-data")
	createBucket(t, h, acctest.Region, "name")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	cmkOut, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	cmk := aws.ToString(cmkOut.KeyMetadata.Arn)
	mrk, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{MultiRegion: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.KMS.ReplicateKey(ctx, &kms.ReplicateKeyInput{KeyId: mrk.KeyMetadata.KeyId, ReplicaRegion: aws.String("eu-west-1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KMS.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String("alias/training"), TargetKeyId: mrk.KeyMetadata.KeyId}); err != nil {
		t.Fatal(err)
	}
	aliasMRK := "arn:aws:kms:me-central-1:123456789012:alias/training"

	cmkReq := map[string]property.Value{"requireCustomerManagedKeys": property.New(true)}
	guard := func(name, prop string, values ...string) pulumiMatrixCase {
		return pulumiMatrixCase{name: name, typ: "ResidencyGuard", inputs: property.NewMap(map[string]property.Value{prop: strings_(values...)})}
	}
	bad := func(c pulumiMatrixCase, property, rule string) pulumiMatrixCase {
		c.property, c.rule = property, rule
		return c
	}
	gpu := func(name string, res map[string]property.Value, extra map[string]property.Value) pulumiMatrixCase {
		return pulumiMatrixCase{name: name, residency: res, typ: "GpuCluster", inputs: gpuClusterInputs("matrix", 2, extra)}
	}
	noZone := func(extra map[string]property.Value) map[string]property.Value {
		m := map[string]property.Value{"zoneId": property.New(property.Null)}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	fs := func(name string, res map[string]property.Value, onlineKey, offlineKey string) pulumiMatrixCase {
		in := featureStoreInputs("uae-data", baseFeatures...).AsMap()
		online := map[string]property.Value{"enabled": property.New(true)}
		if onlineKey != "" {
			online["kmsKeyArn"] = property.New(onlineKey)
		}
		offline := map[string]property.Value{"s3Uri": property.New("s3://uae-data/matrix")}
		if offlineKey != "" {
			offline["kmsKeyArn"] = property.New(offlineKey)
		}
		in["onlineStore"] = property.New(property.NewMap(online))
		in["offlineStore"] = property.New(property.NewMap(offline))
		return pulumiMatrixCase{name: name, residency: res, typ: "FeatureStore", inputs: property.NewMap(in)}
	}
	excluded := func(ids ...string) map[string]property.Value {
		return map[string]property.Value{"excludedZoneIds": strings_(ids...)}
	}

	violating := []pulumiMatrixCase{
		bad(guard("aws-cn bucket ARN", "s3Uris", "arn:aws-cn:s3:::name"), "s3Uris[0]", "partition"),
		bad(guard("aws-cn S3 URL", "s3Uris", "https://name.s3.cn-north-1.amazonaws.com.cn/x"), "s3Uris[0]", "partition"),
		bad(guard("ECR on amazonaws.com.cn", "ecrImageUris", "123456789012.dkr.ecr.me-central-1.amazonaws.com.cn/train:1.0"), "ecrImageUris[0]", "partition"),
		bad(guard("aws-us-gov ARN", "arns", "arn:aws-us-gov:sagemaker:us-gov-west-1:123456789012:model/x"), "arns[0]", "partition"),
		bad(guard("alias to a multi-region key with a replica outside", "kmsKeyArns", aliasMRK), "kmsKeyArns[0]", "kms-key-region"),
		bad(guard("alias in the generic arns list", "arns", aliasMRK), "arns[0]", "kms-key-region"),
		bad(guard("S3 URL naming another region", "s3Uris", "https://uae-data.s3.eu-west-1.amazonaws.com/x"), "s3Uris[0]", "s3-bucket-region"),
		bad(guard("access point", "s3Uris", "arn:aws:s3:me-central-1:123456789012:accesspoint/ap"), "s3Uris[0]", "unverifiable"),
		bad(guard("empty string in a list", "regions", "me-central-1", ""), "regions[1]", "blank-value"),
		bad(guard("blank string in a list", "zoneIds", " "), "zoneIds[0]", "blank-value"),
		bad(gpu("GPU cluster without a key, customer managed keys required", cmkReq, nil), "kmsKeyArn", "kms-customer-managed"),
		bad(gpu("GPU cluster without a key, under the AE default", nil, nil), "kmsKeyArn", "kms-customer-managed"),
		bad(gpu("GPU cluster key by alias to a multi-region key", nil, map[string]property.Value{"kmsKeyArn": property.New(aliasMRK)}), "kmsKeyArn", "kms-key-region"),
		bad(gpu("GPU cluster image by SSM parameter in another region", nil, map[string]property.Value{"image": property.New("resolve:ssm:arn:aws:ssm:eu-west-1:123456789012:parameter/gpu-ami")}), "image", "image-region"),
		bad(gpu("blank required tag", map[string]property.Value{"requiredTags": strings_("cost")}, map[string]property.Value{"tags": property.New(property.NewMap(map[string]property.Value{"cost": property.New("  ")}))}), `tags["cost"]`, "required-tag"),
		bad(gpu("every zone excluded", awsManagedKeys(excluded("mec1-az1", "mec1-az2", "mec1-az3")), noZone(nil)), "instanceType", "No compliant zone"),
		bad(gpu("type offered only in excluded zones", awsManagedKeys(excluded("mec1-az1", "mec1-az3")), noZone(nil)), "instanceType", "No compliant zone"),
		bad(fs("feature store online store without a key", cmkReq, "", cmk), "onlineStore.kmsKeyArn", "kms-customer-managed"),
		bad(fs("feature store offline store without a key", cmkReq, cmk, ""), "offlineStore.kmsKeyArn", "kms-customer-managed"),
		bad(fs("feature store without keys, under the AE default", nil, "", ""), "offlineStore.kmsKeyArn", "kms-customer-managed"),
	}
	compliant := []pulumiMatrixCase{
		guard("every S3 form in region", "s3Uris", "s3://uae-data/x", "https://uae-data.s3.me-central-1.amazonaws.com/x", "https://s3.me-central-1.amazonaws.com/uae-data/x", "arn:aws:s3:::uae-data"),
		{name: "unknown element is checked at apply, not blank", typ: "ResidencyGuard", inputs: property.NewMap(map[string]property.Value{
			"regions": property.New([]property.Value{property.New("me-central-1"), property.New(property.Computed)})})},
		gpu("GPU cluster with a customer managed key", cmkReq, map[string]property.Value{"kmsKeyArn": property.New(cmk)}),
		gpu("GPU cluster placed in the one allowed zone left", awsManagedKeys(excluded("mec1-az1")), noZone(nil)),
		fs("feature store without keys, AWS managed keys accepted", awsManagedKeys(nil), "", ""),
		fs("feature store with both keys", cmkReq, cmk, cmk),
	}

	for _, tc := range append(violating, compliant...) {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, h, tc.residency)
			check, err := s.Check(p.CheckRequest{Urn: urn(tc.typ, "matrix"), Inputs: tc.inputs})
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			if tc.property == "" {
				if len(check.Failures) > 0 {
					t.Fatalf("compliant case failed Check: %+v", check.Failures)
				}
				if tc.inputs.Get("regions").IsArray() && tc.inputs.Get("regions").HasComputed() {
					return // a preview create needs every input known
				}
				if _, err := s.Create(p.CreateRequest{Urn: urn(tc.typ, "matrix"), Properties: check.Inputs, DryRun: true}); err != nil {
					t.Fatalf("preview create: %v", err)
				}
				return
			}
			for _, f := range check.Failures {
				if f.Property == tc.property && strings.Contains(f.Reason, tc.rule) {
					return
				}
			}
			t.Fatalf("failures = %+v, want one on %s naming %s", check.Failures, tc.property, tc.rule)
		})
	}
	assertNoWrites(t, h)
	t.Logf("pulumi residency matrix: %d violating, %d compliant cases", len(violating), len(compliant))
}
