package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/mlplatform/mlplatform/acctest"
)

// The residency acceptance matrix: configurations an attacker or a careless
// engineer would write, through the real Terraform CLI against moto (via the
// shim, whose log tells write calls apart). Every violating case must fail
// at plan with its rule named (or, when its value is known only at apply,
// at apply before anything is written), and the whole matrix must make zero
// write calls; every compliant case must plan cleanly.

// residencyFixtures are the things the matrix refers to, made with fixture
// clients (left out of the shim's write log).
type residencyFixtures struct {
	cmk, euKey, mrk string // key ARNs: in region, in eu-west-1, multi-region with a replica in eu-west-1
	aliasMRK        string // alias ARN in me-central-1 pointing to mrk
	aliasCMK        string // alias ARN in me-central-1 pointing to cmk
	vpcNoSubnet     string // a VPC with no subnet at all
	vpcAZ3          string // a VPC with a subnet in mec1-az3 only
}

func makeResidencyFixtures(t *testing.T, h *acctest.Harness) residencyFixtures {
	t.Helper()
	createBucket(t, h, "uae-data", "me-central-1")
	createBucket(t, h, "eu-data", "eu-west-1")
	createBucket(t, h, "name", "me-central-1") // same name as the aws-cn bucket the attacker means
	createBucket(t, h, "uae-replicated", "me-central-1")
	createBucket(t, h, "eu-replica", "eu-west-1")
	replicate(t, h, "uae-replicated", "eu-replica")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	f := residencyFixtures{cmk: createKey(t, h, acctest.Region), euKey: createKey(t, h, "eu-west-1")}
	mrk, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{MultiRegion: aws.Bool(true), Description: aws.String("acceptance test multi-region key")})
	if err != nil {
		t.Fatalf("creating multi-region key: %v", err)
	}
	f.mrk = aws.ToString(mrk.KeyMetadata.Arn)
	if _, err := c.KMS.ReplicateKey(ctx, &kms.ReplicateKeyInput{KeyId: mrk.KeyMetadata.KeyId, ReplicaRegion: aws.String("eu-west-1")}); err != nil {
		t.Fatalf("replicating multi-region key to eu-west-1: %v", err)
	}
	for alias, target := range map[string]string{"alias/training": f.mrk, "alias/uae": f.cmk} {
		if _, err := c.KMS.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String(alias), TargetKeyId: aws.String(target)}); err != nil {
			t.Fatalf("creating %s: %v", alias, err)
		}
	}
	f.aliasMRK = "arn:aws:kms:me-central-1:123456789012:alias/training"
	f.aliasCMK = "arn:aws:kms:me-central-1:123456789012:alias/uae"

	vpc := func(subnetAZ string) string {
		out, err := c.EC2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.20.0.0/16")})
		if err != nil {
			t.Fatalf("creating fixture VPC: %v", err)
		}
		id := aws.ToString(out.Vpc.VpcId)
		if subnetAZ != "" {
			if _, err := c.EC2.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(id), CidrBlock: aws.String("10.20.1.0/24"), AvailabilityZoneId: aws.String(subnetAZ)}); err != nil {
				t.Fatalf("creating fixture subnet in %s: %v", subnetAZ, err)
			}
		}
		return id
	}
	f.vpcNoSubnet, f.vpcAZ3 = vpc(""), vpc("mec1-az3")
	return f
}

type matrixCase struct {
	name   string
	config string // the whole configuration, provider block included
	want   string // regexp the plan error must match; "" = compliant
}

func guardCase(h *acctest.Harness, name, residency, body, want string) matrixCase {
	return matrixCase{name: name, want: want, config: h.ProviderConfig(residency) + "resource \"mlplatform_residency_guard\" \"m\" {\n  " + body + "\n}\n"}
}

func gpuCase(h *acctest.Harness, name, residency, extra, want string) matrixCase {
	return matrixCase{name: name, want: want, config: gpuClusterConfig(h, residency, "matrix", extra)}
}

func featureStoreCase(h *acctest.Harness, name, residency, online, offlineKey, want string) matrixCase {
	return matrixCase{name: name, want: want, config: h.ProviderConfig(residency) + fmt.Sprintf(`
resource "mlplatform_feature_store" "m" {
  name                           = "matrix"
  record_identifier_feature_name = "customer_id"
  event_time_feature_name        = "event_time"
  features = [
    { name = "customer_id", type = "String" },
    { name = "event_time", type = "Fractional" },
  ]
  online_store = { %s }
  offline_store = {
    s3_uri = "s3://uae-data/matrix"
    %s
  }
  role_arn = "arn:aws:iam::123456789012:role/feature-store"
}
`, online, offlineKey)}
}

func endpointCase(h *acctest.Harness, name, ec2URL, want string) matrixCase {
	cfg := regexp.MustCompile(`(?m)^(\s*ec2\s*=\s*)"[^"]*"`).ReplaceAllString(h.ProviderConfig(""), fmt.Sprintf("${1}%q", ec2URL))
	return matrixCase{name: name, want: want, config: cfg + "data \"mlplatform_residency\" \"m\" {}\n"}
}

func residencyMatrix(h *acctest.Harness, f residencyFixtures) (violating, compliant []matrixCase) {
	// Jurisdiction AE requires customer managed keys by default: the cases
	// without a key keep the default (""), those about something else
	// accept AWS managed keys by name (acctest.AWSManagedKeys).
	const cmk = "require_customer_managed_keys = true"
	const noCMK = acctest.AWSManagedKeys
	const gpuZone = "  node_count = 2\n  zone_id = \"mec1-az1\""
	violating = []matrixCase{
		// Partitions: outside by definition, never looked up by name.
		guardCase(h, "partition: aws-cn bucket ARN", "", `s3_uris = ["arn:aws-cn:s3:::name"]`, `partition`),
		guardCase(h, "partition: aws-cn S3 URL", "", `s3_uris = ["https://name.s3.cn-north-1.amazonaws.com.cn/x"]`, `partition`),
		guardCase(h, "partition: cn host naming an allowed region", "", `s3_uris = ["https://name.s3.me-central-1.amazonaws.com.cn/x"]`, `partition`),
		guardCase(h, "partition: ECR on amazonaws.com.cn", "", `ecr_image_uris = ["123456789012.dkr.ecr.me-central-1.amazonaws.com.cn/train:1.0"]`, `partition`),
		guardCase(h, "partition: aws-cn KMS key", "", `kms_key_arns = ["arn:aws-cn:kms:me-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"]`, `partition`),
		guardCase(h, "partition: aws-us-gov ARN", "", `arns = ["arn:aws-us-gov:sagemaker:us-gov-west-1:123456789012:model/x"]`, `partition`),
		guardCase(h, "partition: aws-cn IAM role", "", `arns = ["arn:aws-cn:iam::123456789012:role/x"]`, `partition`),
		guardCase(h, "region: aws-iso region", "", `regions = ["us-iso-east-1"]`, `region-allowed`),

		// Indirection: resolved, then checked.
		guardCase(h, "alias ARN to a multi-region key with a replica outside", "", fmt.Sprintf(`kms_key_arns = [%q]`, f.aliasMRK), `kms-key-region.*replica in eu-west-1`),
		guardCase(h, "alias ARN in the generic arns list", "", fmt.Sprintf(`arns = [%q]`, f.aliasMRK), `kms-key-region.*eu-west-1`),
		guardCase(h, "multi-region key ARN with a replica outside", "", fmt.Sprintf(`kms_key_arns = [%q]`, f.mrk), `kms-key-region.*eu-west-1`),
		guardCase(h, "key outside in the generic arns list", "", fmt.Sprintf(`arns = [%q]`, f.euKey), `kms-key-region.*eu-west-1`),
		guardCase(h, "bucket ARN outside in the generic arns list", "", `arns = ["arn:aws:s3:::eu-data"]`, `s3-bucket-region.*eu-west-1`),
		guardCase(h, "bucket replicating outside, by ARN in arns", "", `arns = ["arn:aws:s3:::uae-replicated"]`, `s3-replication`),
		guardCase(h, "S3 URL naming another region", "", `s3_uris = ["https://uae-data.s3.eu-west-1.amazonaws.com/x"]`, `s3-bucket-region.*eu-west-1`),
		guardCase(h, "access point (bucket not resolvable)", "", `s3_uris = ["arn:aws:s3:me-central-1:123456789012:accesspoint/training"]`, `unverifiable.*access point`),
		guardCase(h, "multi-region access point in arns", "", `arns = ["arn:aws:s3::123456789012:accesspoint/mfzwi23gnjvgw.mrap"]`, `unverifiable.*multi-region access point`),
		guardCase(h, "regional ARN without a region", "", `arns = ["arn:aws:sagemaker::123456789012:model/x"]`, `unverifiable.*names no region`),

		// Absence and blanks.
		guardCase(h, "empty string in a guard list", "", `regions = [""]`, `blank-value.*regions\[0\]`),
		guardCase(h, "blank string in a guard list", "", `s3_uris = ["  "]`, `blank-value.*s3_uris\[0\]`),
		gpuCase(h, "GPU cluster without a key, customer managed keys required", cmk, gpuZone, `kms-customer-managed.*kms_key_arn`),
		gpuCase(h, "GPU cluster without a key, under the AE default", "", gpuZone,
			`kms-customer-managed.*kms_key_arn.*jurisdiction AE requires customer managed keys by default.*residency.require_customer_managed_keys = false`),
		matrixCase{name: "blank required tag", want: `required-tag.*owner`,
			config: strings.Replace(gpuClusterConfig(h, noCMK+"\n"+`required_tags = ["owner"]`, "matrix", gpuZone), `tags          = { team = "ml-platform" }`, `tags = { team = "ml-platform", owner = "  " }`, 1)},
		featureStoreCase(h, "feature store online store without a key", cmk, "enabled = true", fmt.Sprintf("kms_key_arn = %q", f.cmk), `kms-customer-managed.*online_store.kms_key_arn`),
		featureStoreCase(h, "feature store offline store without a key", cmk, fmt.Sprintf("enabled = true\n    kms_key_arn = %q", f.cmk), "", `kms-customer-managed.*offline_store.kms_key_arn`),
		featureStoreCase(h, "feature store without keys, under the AE default", "", "enabled = true", "", `kms-customer-managed.*offline_store.kms_key_arn`),

		// GPU cluster indirection.
		gpuCase(h, "GPU cluster key by alias to a multi-region key", "", gpuZone+fmt.Sprintf("\n  kms_key_arn = %q", f.aliasMRK), `kms-key-region.*eu-west-1`),
		matrixCase{name: "GPU cluster image by SSM parameter in another region", want: `image-region.*eu-west-1`,
			config: strings.Replace(gpuClusterConfig(h, noCMK, "matrix", gpuZone), `"/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"`, `"resolve:ssm:arn:aws:ssm:eu-west-1:123456789012:parameter/gpu-ami"`, 1)},

		// No compliant zone.
		gpuCase(h, "every zone excluded", noCMK+"\n"+`excluded_zone_ids = ["mec1-az1", "mec1-az2", "mec1-az3"]`, "  node_count = 2", `No compliant zone.*mec1-az1: excluded`),
		gpuCase(h, "type offered only in excluded zones", noCMK+"\n"+`excluded_zone_ids = ["mec1-az1", "mec1-az3"]`, "  node_count = 2", `No compliant zone.*mec1-az2: does not offer p5en.48xlarge`),
		gpuCase(h, "no subnet of the VPC in an allowed zone", noCMK, fmt.Sprintf("  node_count = 2\n  vpc_id = %q", f.vpcNoSubnet), `No compliant zone.*with a subnet of vpc-`),

		// Unknown at plan, empty once known: refused at apply, before any write.
		gpuCase(h, "GPU cluster key empty once known at apply", cmk, gpuZone+"\n  kms_key_arn = timestamp() == \"\" ? \"x\" : \"\"", `kms-customer-managed`),
		matrixCase{name: "guard element blank once known at apply", want: `blank-value.*s3_uris\[0\]`,
			config: h.ProviderConfig("") + "resource \"mlplatform_residency_guard\" \"m\" {\n  s3_uris = [timestamp() == \"\" ? \"s3://uae-data/x\" : \" \"]\n}\n"},

		// Endpoints.
		endpointCase(h, "endpoint naming another region", "https://ec2.eu-west-1.amazonaws.com", `endpoint "https://ec2.eu-west-1.amazonaws.com" names region eu-west-1`),
		endpointCase(h, "global endpoint", "https://ec2.amazonaws.com", `global endpoint, served from us-east-1`),
		endpointCase(h, "endpoint in another partition", "https://ec2.cn-north-1.amazonaws.com.cn", `partition aws-cn`),
	}
	compliant = []matrixCase{
		guardCase(h, "guard: every reference form in region", cmk, fmt.Sprintf(`regions        = ["me-central-1"]
  zone_ids       = ["mec1-az1"]
  kms_key_arns   = [%q, %q]
  s3_uris        = ["s3://uae-data/x", "https://uae-data.s3.me-central-1.amazonaws.com/x", "https://s3.me-central-1.amazonaws.com/uae-data/x", "arn:aws:s3:::uae-data"]
  ecr_image_uris = ["123456789012.dkr.ecr.me-central-1.amazonaws.com/train:1.0"]
  arns           = ["arn:aws:iam::123456789012:role/sagemaker", "arn:aws:sagemaker:me-central-1:123456789012:feature-group/clicks", %q]`, f.cmk, f.aliasCMK, f.aliasCMK), ""),
		gpuCase(h, "GPU cluster with a customer managed key by alias", cmk, gpuZone+fmt.Sprintf("\n  kms_key_arn = %q", f.aliasCMK), ""),
		gpuCase(h, "GPU cluster placed in the one allowed zone left", noCMK+"\n"+`excluded_zone_ids = ["mec1-az1"]`, "  node_count = 2", ""),
		gpuCase(h, "GPU cluster in the allowed zone where its VPC has a subnet", noCMK, fmt.Sprintf("  node_count = 2\n  vpc_id = %q", f.vpcAZ3), ""),
		featureStoreCase(h, "feature store with both keys", cmk, fmt.Sprintf("enabled = true\n    kms_key_arn = %q", f.cmk), fmt.Sprintf("kms_key_arn = %q", f.cmk), ""),
		featureStoreCase(h, "feature store without keys, AWS managed keys accepted", noCMK, "enabled = true", "", ""),
		featureStoreCase(h, "feature store with the online store off", cmk, "enabled = false", fmt.Sprintf("kms_key_arn = %q", f.cmk), ""),
		// Unknown at plan is checked at apply: never blank, never absent.
		guardCase(h, "guard element unknown at plan", "", `s3_uris = ["s3://uae-data/x", timestamp() == "" ? "" : "s3://uae-data/y"]`, ""),
		gpuCase(h, "GPU cluster key unknown at plan, customer managed keys required", cmk, gpuZone+fmt.Sprintf("\n  kms_key_arn = timestamp() == \"\" ? \"\" : %q", f.cmk), ""),
		featureStoreCase(h, "feature store online key unknown at plan", cmk, fmt.Sprintf("enabled = true\n    kms_key_arn = timestamp() == \"\" ? \"\" : %q", f.cmk), fmt.Sprintf("kms_key_arn = %q", f.cmk), ""),
		endpointCase(h, "endpoint on a custom host", "http://"+strings.TrimPrefix(strings.TrimPrefix(h.URL, "http://"), "https://"), ""),
	}
	return violating, compliant
}

func TestAccResidencyMatrix(t *testing.T) {
	h := acctest.Setup(t)
	f := makeResidencyFixtures(t, h)
	violating, compliant := residencyMatrix(h, f)
	var steps []resource.TestStep
	for i, c := range violating {
		steps = append(steps, resource.TestStep{
			PreConfig: func() { t.Logf("violating case %d/%d: %s", i+1, len(violating), c.name) },
			Config:    c.config,
			// Terraform wraps diagnostics: a space in the pattern matches any run of white space.
			ExpectError: regexp.MustCompile(`(?s)` + strings.ReplaceAll(c.want, " ", `\s+`)),
		})
	}
	for i, c := range compliant {
		steps = append(steps, resource.TestStep{
			PreConfig:          func() { t.Logf("compliant case %d/%d: %s", i+1, len(compliant), c.name) },
			Config:             c.config,
			PlanOnly:           true,
			ExpectNonEmptyPlan: !strings.Contains(c.config, "data \"mlplatform_residency\""),
		})
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps:                    steps,
	})
	// Rejected and compliant plans alike wrote nothing.
	checkNoWrites(t, h)
	atApply := 0
	for _, c := range violating {
		if strings.Contains(c.config, "timestamp()") {
			atApply++
		}
	}
	t.Logf("residency matrix: %d violating cases rejected before any write (%d of them at apply, their values unknown at plan), %d compliant cases planned, %d write calls",
		len(violating), atApply, len(compliant), len(h.Shim.Writes()))
}
