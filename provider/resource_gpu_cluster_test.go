package provider_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

const gpuClusterResource = "mlplatform_gpu_cluster.test"

// gpuClusterConfig is a p5en cluster in mec1-az1 with the given body lines
// added (node_count, zone, ...).
func gpuClusterConfig(h *acctest.Harness, residency, name, extra string) string {
	return h.ProviderConfig(residency) + fmt.Sprintf(`
resource "mlplatform_gpu_cluster" "test" {
  name          = %q
  instance_type = "p5en.48xlarge"
  image         = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
  root_volume   = { size_gib = 200 }
  data_volumes  = [{ size_gib = 1000 }]
  user_data     = "#!/bin/sh\necho hwprobe bootstrap slot\n"
  tags          = { team = "ml-platform" }

  capacity_retry = { attempts = 2, initial_delay = "10ms" }
%s
}
`, name, extra)
}

// ec2Client returns a fixture EC2 client through the shim.
func ec2Client(t *testing.T, h *acctest.Harness) *ec2.Client {
	t.Helper()
	c, err := h.Clients(context.Background(), acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	return acctest.EC2(c)
}

// fixtureEnv is the core over fixture clients (marked as such in the shim's
// log): the tests' view of what exists in EC2, and the maker of what
// "another configuration" made, which takes AWS managed keys (the setting of
// acctest.AWSManagedKeys).
func fixtureEnv(t *testing.T, h *acctest.Harness) *platform.Env {
	t.Helper()
	awsManaged := false
	env, err := platform.Open(context.Background(), platform.Config{Region: acctest.Region, Endpoints: h.Endpoints(), UserAgent: "acctest-fixture",
		Residency: residency.PolicyConfig{RequireCustomerManagedKeys: &awsManaged}})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// liveGPUNodes lists the live nodes of cluster name, by index; none when
// nothing of it exists.
func liveGPUNodes(t *testing.T, h *acctest.Harness, name string) ([]platform.GPUNode, error) {
	t.Helper()
	c, err := fixtureEnv(t, h).FindGPUCluster(context.Background(), name, "")
	if errors.Is(err, platform.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.Nodes, nil
}

type subnet struct{ ID string }

// defaultSubnet is the default subnet of zone id zoneID.
func defaultSubnet(t *testing.T, h *acctest.Harness, zoneID string) (subnet, error) {
	t.Helper()
	out, err := ec2Client(t, h).DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
		{Name: aws.String("availability-zone-id"), Values: []string{zoneID}},
		{Name: aws.String("default-for-az"), Values: []string{"true"}},
	}})
	if err != nil {
		return subnet{}, err
	}
	if len(out.Subnets) == 0 {
		return subnet{}, fmt.Errorf("no default subnet in %s", zoneID)
	}
	return subnet{ID: aws.ToString(out.Subnets[0].SubnetId)}, nil
}

// recordRunInstances records the form of every RunInstances request (a fault
// that never matches).
func recordRunInstances(h *acctest.Harness) func() []map[string]string {
	var mu sync.Mutex
	var forms []map[string]string
	h.Shim.Inject(acctest.Fault{Service: "ec2", Action: "RunInstances", Code: "Unused", Times: 0, Match: func(r *acctest.Request) bool {
		if r.Fixture {
			return false
		}
		f := map[string]string{}
		for k, v := range r.Form {
			f[k] = v[0]
		}
		mu.Lock()
		forms = append(forms, f)
		mu.Unlock()
		return false
	}})
	return func() []map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(forms)
	}
}

func clusterNodeIDs(s *terraform.State) ([]string, error) {
	rs, ok := s.RootModule().Resources[gpuClusterResource]
	if !ok {
		return nil, fmt.Errorf("%s not in state", gpuClusterResource)
	}
	var ids []string
	for k, v := range rs.Primary.Attributes {
		if strings.HasPrefix(k, "node_ids.") && k != "node_ids.#" {
			ids = append(ids, v)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// checkLiveNodes checks in EC2 that the cluster has exactly n live nodes with
// indices 0..n-1.
func checkLiveNodes(t *testing.T, h *acctest.Harness, name string, n int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		live, err := liveGPUNodes(t, h, name)
		if err != nil {
			return err
		}
		if len(live) != n {
			return fmt.Errorf("want %d live nodes in EC2, found %d", n, len(live))
		}
		for i, node := range live {
			if node.Index != i {
				return fmt.Errorf("node %s has index %d, want %d", node.InstanceID, node.Index, i)
			}
		}
		return nil
	}
}

func TestAccGPUCluster_basic(t *testing.T) {
	h := acctest.Setup(t)
	key := createKey(t, h, acctest.Region)
	forms := recordRunInstances(h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			// The AE default: customer managed keys required, and given.
			Config: gpuClusterConfig(h, "", "train", fmt.Sprintf(`
  node_count  = 2
  zone_id     = "mec1-az1"
  kms_key_arn = %q`, key)),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "id", "train"),
				resource.TestCheckResourceAttr(gpuClusterResource, "node_ids.#", "2"),
				resource.TestCheckResourceAttr(gpuClusterResource, "private_ips.#", "2"),
				resource.TestCheckResourceAttr(gpuClusterResource, "nodes.#", "2"),
				resource.TestCheckResourceAttr(gpuClusterResource, "nodes.0.index", "0"),
				resource.TestCheckResourceAttr(gpuClusterResource, "nodes.1.index", "1"),
				resource.TestCheckResourceAttr(gpuClusterResource, "nodes.0.zone_id", "mec1-az1"),
				resource.TestCheckResourceAttr(gpuClusterResource, "nodes.0.state", "running"),
				resource.TestCheckResourceAttr(gpuClusterResource, "zone", "me-central-1a"),
				resource.TestCheckResourceAttr(gpuClusterResource, "placement_zone_id", "mec1-az1"),
				resource.TestCheckResourceAttr(gpuClusterResource, "efa_interfaces", "16"),
				resource.TestCheckResourceAttr(gpuClusterResource, "placement_group_name", "mlplatform-train"),
				resource.TestCheckResourceAttr(gpuClusterResource, "launch_template_version", "1"),
				resource.TestCheckResourceAttr(gpuClusterResource, "tags_all.team", "ml-platform"),
				resource.TestMatchResourceAttr(gpuClusterResource, "launch_template_id", regexp.MustCompile(`^lt-`)),
				resource.TestMatchResourceAttr(gpuClusterResource, "image_id", regexp.MustCompile(`^ami-`)),
				resource.TestMatchResourceAttr(gpuClusterResource, "subnet_id", regexp.MustCompile(`^subnet-`)),
				checkLiveNodes(t, h, "train", 2),
				func(*terraform.State) error {
					// The placement group exists (served by the shim).
					out, err := ec2Client(t, h).DescribePlacementGroups(context.Background(), &ec2.DescribePlacementGroupsInput{GroupNames: []string{"mlplatform-train"}})
					if err != nil || len(out.PlacementGroups) != 1 || out.PlacementGroups[0].Strategy != ec2types.PlacementStrategyCluster {
						return fmt.Errorf("placement group mlplatform-train: %v %v", out, err)
					}
					// One launch request for both nodes, with 16 EFA
					// interfaces: device 0 on card 0, then device 1 on cards
					// 1..15, and a client token.
					fs := forms()
					if len(fs) != 1 {
						return fmt.Errorf("want 1 RunInstances request, got %d", len(fs))
					}
					f := fs[0]
					want := map[string]string{
						"MinCount": "2", "MaxCount": "2",
						"NetworkInterface.1.InterfaceType": "efa", "NetworkInterface.1.DeviceIndex": "0", "NetworkInterface.1.NetworkCardIndex": "0",
						"NetworkInterface.2.InterfaceType": "efa", "NetworkInterface.2.DeviceIndex": "1", "NetworkInterface.2.NetworkCardIndex": "1",
						"NetworkInterface.16.InterfaceType": "efa", "NetworkInterface.16.DeviceIndex": "1", "NetworkInterface.16.NetworkCardIndex": "15",
					}
					for k, v := range want {
						if f[k] != v {
							return fmt.Errorf("RunInstances %s = %q, want %q", k, f[k], v)
						}
					}
					if _, extra := f["NetworkInterface.17.DeviceIndex"]; extra {
						return fmt.Errorf("RunInstances has more than 16 network interfaces")
					}
					if !strings.HasPrefix(f["ClientToken"], "mlp-") {
						return fmt.Errorf("RunInstances ClientToken = %q, want mlp-...", f["ClientToken"])
					}
					// The launch template encrypts every volume with the key.
					lt, err := ec2Client(t, h).DescribeLaunchTemplateVersions(context.Background(), &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String("mlplatform-train"), Versions: []string{"$Latest"}})
					if err != nil || len(lt.LaunchTemplateVersions) != 1 {
						return fmt.Errorf("launch template: %v", err)
					}
					d := lt.LaunchTemplateVersions[0].LaunchTemplateData
					if len(d.BlockDeviceMappings) != 2 {
						return fmt.Errorf("want root and data volume, got %d mappings", len(d.BlockDeviceMappings))
					}
					for _, bd := range d.BlockDeviceMappings {
						if !aws.ToBool(bd.Ebs.Encrypted) || aws.ToString(bd.Ebs.KmsKeyId) != key {
							return fmt.Errorf("volume %s not encrypted with %s", aws.ToString(bd.DeviceName), key)
						}
					}
					if d.Placement == nil || aws.ToString(d.Placement.GroupName) != "mlplatform-train" {
						return fmt.Errorf("launch template placement group: %+v", d.Placement)
					}
					return nil
				},
			),
		}},
	})
}

func TestAccGPUCluster_update(t *testing.T) {
	h := acctest.Setup(t)
	var before []string
	cfg := func(n int, extra string) string {
		return gpuClusterConfig(h, acctest.AWSManagedKeys, "scale", fmt.Sprintf("  node_count = %d\n  zone_id = \"mec1-az1\"\n%s", n, extra))
	}
	remember := func(s *terraform.State) (err error) { before, err = clusterNodeIDs(s); return err }
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				Config: cfg(2, ""),
				Check:  resource.ComposeAggregateTestCheckFunc(resource.TestCheckResourceAttr(gpuClusterResource, "node_ids.#", "2"), checkLiveNodes(t, h, "scale", 2), remember),
			},
			{
				// Scale out in place: the two nodes stay, two are added.
				Config: cfg(4, ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(gpuClusterResource, "node_ids.#", "4"),
					resource.TestCheckResourceAttr(gpuClusterResource, "nodes.3.index", "3"),
					checkLiveNodes(t, h, "scale", 4),
					func(s *terraform.State) error {
						ids, err := clusterNodeIDs(s)
						if err != nil {
							return err
						}
						for _, id := range before {
							if !slices.Contains(ids, id) {
								return fmt.Errorf("node %s was replaced by a scale-out", id)
							}
						}
						before = ids
						return nil
					},
				),
			},
			{
				// Scale in: the highest indices go, node 0 stays.
				Config: cfg(1, ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(gpuClusterResource, "node_ids.#", "1"),
					resource.TestCheckResourceAttr(gpuClusterResource, "nodes.0.index", "0"),
					checkLiveNodes(t, h, "scale", 1),
					remember,
				),
			},
			{
				// A new instance type rolls the node (terminate first).
				Config: strings.Replace(cfg(1, ""), "p5en.48xlarge", "g6.xlarge", 1),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(gpuClusterResource, "node_ids.#", "1"),
					resource.TestCheckResourceAttr(gpuClusterResource, "nodes.0.instance_type", "g6.xlarge"),
					resource.TestCheckResourceAttr(gpuClusterResource, "efa_interfaces", "0"),
					resource.TestCheckResourceAttr(gpuClusterResource, "launch_template_version", "2"),
					checkLiveNodes(t, h, "scale", 1),
					func(s *terraform.State) error {
						ids, err := clusterNodeIDs(s)
						if err != nil {
							return err
						}
						if slices.Equal(ids, before) {
							return fmt.Errorf("node %v was not rolled", ids)
						}
						before = ids
						return nil
					},
				),
			},
			{
				// New tags retag in place: nothing is rolled.
				Config: strings.Replace(strings.Replace(cfg(1, ""), "p5en.48xlarge", "g6.xlarge", 1), `team = "ml-platform"`, `team = "research"`, 1),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(gpuClusterResource, "tags_all.team", "research"),
					func(s *terraform.State) error {
						ids, err := clusterNodeIDs(s)
						if err != nil {
							return err
						}
						if !slices.Equal(ids, before) {
							return fmt.Errorf("a tag change replaced node %v with %v", before, ids)
						}
						out, err := ec2Client(t, h).DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: ids})
						if err != nil {
							return err
						}
						for _, tag := range out.Reservations[0].Instances[0].Tags {
							if aws.ToString(tag.Key) == "team" && aws.ToString(tag.Value) != "research" {
								return fmt.Errorf("node tag team = %s, want research", aws.ToString(tag.Value))
							}
						}
						return nil
					},
				),
			},
		},
	})
}

func TestAccGPUCluster_import(t *testing.T) {
	h := acctest.Setup(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{Config: gpuClusterConfig(h, acctest.AWSManagedKeys, "imported", "  node_count = 2\n  zone_id = \"mec1-az1\"")},
			{
				ResourceName:      gpuClusterResource,
				ImportState:       true,
				ImportStateId:     "imported",
				ImportStateVerify: true,
				// image is an SSM parameter in the configuration and the AMI it
				// named on import; capacity_retry and timeouts live only in
				// configuration; moto does not echo EFA interface types, and
				// gives every interface the VPC's default security group.
				ImportStateVerifyIgnore: []string{"image", "capacity_retry", "timeouts", "efa_interfaces", "security_group_ids"},
			},
		},
	})
}

func TestAccGPUCluster_disappears(t *testing.T) {
	h := acctest.Setup(t)
	var lost string
	cfg := gpuClusterConfig(h, acctest.AWSManagedKeys, "vanish", "  node_count = 2\n  zone_id = \"mec1-az1\"")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				// A node terminated outside Terraform shows as a diff.
				Config: cfg,
				Check: func(s *terraform.State) error {
					ids, err := clusterNodeIDs(s)
					if err != nil {
						return err
					}
					lost = s.RootModule().Resources[gpuClusterResource].Primary.Attributes["nodes.1.id"]
					_ = ids
					_, err = ec2Client(t, h).TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{lost}})
					return err
				},
				ExpectNonEmptyPlan: true,
			},
			{
				// The next apply repairs it: index 1 gets a new node.
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(gpuClusterResource, "node_ids.#", "2"),
					checkLiveNodes(t, h, "vanish", 2),
					func(s *terraform.State) error {
						if id := s.RootModule().Resources[gpuClusterResource].Primary.Attributes["nodes.1.id"]; id == lost {
							return fmt.Errorf("node 1 is still the terminated %s", id)
						}
						return nil
					},
				),
			},
			{
				// The whole cluster deleted outside Terraform leaves state.
				Config: cfg,
				Check: func(*terraform.State) error {
					env := platformEnv(t, h)
					return env.DeleteGPUCluster(context.Background(), platform.GPUClusterSpec{Name: "vanish", CreationToken: ""}, platform.GPUClusterOptions{})
				},
				ExpectNonEmptyPlan: true,
			},
		},
	})
}

// cmkDefaultError matches the plan error of a resource without a key at
// attr under jurisdiction AE's default: the rule, the attribute, why, and
// the opt-out (Terraform wraps diagnostics: words are matched across any
// run of white space).
func cmkDefaultError(attr string) *regexp.Regexp {
	words := func(s string) string { return strings.ReplaceAll(regexp.QuoteMeta(s), " ", `\s+`) }
	return regexp.MustCompile(`(?s)Residency violation: kms-customer-managed.*` + words(attr+` = "": no KMS key is given`) +
		`.*` + words("jurisdiction AE requires customer managed keys by default (residency.require_customer_managed_keys)") +
		`.*` + words("set residency.require_customer_managed_keys = false in the provider configuration"))
}

func TestAccGPUCluster_residencyRejected(t *testing.T) {
	h := acctest.Setup(t)
	foreignKey := createKey(t, h, "eu-west-1")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				// Jurisdiction AE requires customer managed keys by default:
				// a cluster without a key is refused at plan, on the
				// attribute, with the rule and how to opt out.
				Config:      gpuClusterConfig(h, "", "nope", "  node_count = 2\n  zone_id = \"mec1-az1\""),
				ExpectError: cmkDefaultError("kms_key_arn"),
			},
			{
				Config:      gpuClusterConfig(h, `excluded_zone_ids = ["mec1-az3"]`, "nope", "  node_count = 2\n  zone_id = \"mec1-az3\""),
				ExpectError: regexp.MustCompile(`(?s)zone-excluded.*mec1-az3`),
			},
			{
				Config:      gpuClusterConfig(h, "", "nope", fmt.Sprintf("  node_count = 2\n  zone_id = \"mec1-az1\"\n  kms_key_arn = %q", foreignKey)),
				ExpectError: regexp.MustCompile(`(?s)kms-key-region.*eu-west-1`),
			},
			{
				Config:      gpuClusterConfig(h, "", "nope", "  node_count = 2\n  zone = \"eu-west-1a\""),
				ExpectError: regexp.MustCompile(`(?s)Residency violation`),
			},
			{
				Config:      gpuClusterConfig(h, `required_tags = ["cost-center"]`, "nope", "  node_count = 2"),
				ExpectError: regexp.MustCompile(`(?s)required-tag.*cost-center`),
			},
		},
	})
	checkNoWrites(t, h)
}

func TestAccGPUCluster_typeNotOffered(t *testing.T) {
	h := acctest.Setup(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				Config:      strings.Replace(gpuClusterConfig(h, acctest.AWSManagedKeys, "nope", "  node_count = 2"), "p5en.48xlarge", "p5.48xlarge", 1),
				ExpectError: regexp.MustCompile(`(?s)p5.48xlarge is not offered in me-central-1; offered GPU types there:.*p5en.48xlarge`),
			},
			{
				Config:      gpuClusterConfig(h, acctest.AWSManagedKeys, "nope", "  node_count = 2\n  zone_id = \"mec1-az2\""),
				ExpectError: regexp.MustCompile(`(?s)p5en.48xlarge is not offered in mec1-az2; allowed zones that offer it:\s+mec1-az1,\s+mec1-az3`),
			},
			{
				Config:      strings.Replace(gpuClusterConfig(h, acctest.AWSManagedKeys, "nope", "  node_count = 2"), "p5en.48xlarge", "c7i.large", 1),
				ExpectError: regexp.MustCompile(`(?s)c7i.large has no GPU`),
			},
			{
				Config:      strings.Replace(gpuClusterConfig(h, acctest.AWSManagedKeys, "nope", "  node_count = 2\n  efa_interfaces = 4"), "p5en.48xlarge", "g6.xlarge", 1),
				ExpectError: regexp.MustCompile(`(?s)g6.xlarge does not support EFA`),
			},
			{
				Config:      gpuClusterConfig(h, acctest.AWSManagedKeys, "nope", "  node_count = 2\n  capacity = { type = \"capacity_block\" }"),
				ExpectError: regexp.MustCompile(`(?s)Missing capacity reservation.*reservation_id`),
			},
		},
	})
	checkNoWrites(t, h)
}

func TestAccGPUCluster_capacityFallback(t *testing.T) {
	h := acctest.Setup(t)
	az1, err := defaultSubnet(t, h, "mec1-az1")
	if err != nil {
		t.Fatal(err)
	}
	// mec1-az1 has no p5en capacity: every launch there fails.
	h.Shim.Inject(acctest.Fault{Service: "ec2", Action: "RunInstances", Code: "InsufficientInstanceCapacity",
		Message: "We currently do not have sufficient p5en.48xlarge capacity in the Availability Zone you requested (me-central-1a).",
		Match:   func(r *acctest.Request) bool { return r.Form.Get("NetworkInterface.1.SubnetId") == az1.ID }})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				// Without fallback: the error says what was tried and what
				// else could be.
				Config:      gpuClusterConfig(h, acctest.AWSManagedKeys, "nofallback", "  node_count = 2\n  zone_id = \"mec1-az1\""),
				ExpectError: regexp.MustCompile(`(?s)no capacity for 2 x p5en.48xlarge; tried mec1-az1 \(2 attempts.*InsufficientInstanceCapacity.*zone_fallback = true to also try\s+mec1-az3`),
			},
			{
				// With fallback: the cluster lands in mec1-az3, inside the
				// jurisdiction, and mec1-az2 (no p5en there) is never tried.
				Config: gpuClusterConfig(h, acctest.AWSManagedKeys, "fallback", "  node_count = 2\n  zone_id = \"mec1-az1\"\n  zone_fallback = true"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(gpuClusterResource, "zone_id", "mec1-az1"),
					resource.TestCheckResourceAttr(gpuClusterResource, "placement_zone_id", "mec1-az3"),
					resource.TestCheckResourceAttr(gpuClusterResource, "nodes.0.zone_id", "mec1-az3"),
					resource.TestCheckResourceAttr(gpuClusterResource, "nodes.1.zone_id", "mec1-az3"),
					checkLiveNodes(t, h, "fallback", 2),
				),
			},
		},
	})
}

// platformEnv opens the core environment against the harness, its waits
// polling every 50ms (never at the intervals meant for AWS). Its users, the
// fault matrices, are not about keys: it accepts AWS managed keys (the
// setting of acctest.AWSManagedKeys).
func platformEnv(t *testing.T, h *acctest.Harness) *platform.Env {
	t.Helper()
	awsManaged := false
	env, err := platform.Open(context.Background(), platform.Config{Region: acctest.Region, Endpoints: h.Endpoints(), Polling: platform.PollingEvery(50 * time.Millisecond),
		Residency: residency.PolicyConfig{RequireCustomerManagedKeys: &awsManaged}})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestAccGPUCluster_refreshCalls counts the AWS calls of one refresh of a
// cluster of 1, 16 and 256 nodes (the shim's request log): the count must
// not grow with the node count (target: at most 3 up to 256 nodes).
func TestAccGPUCluster_refreshCalls(t *testing.T) {
	h := acctest.Setup(t)
	type row struct {
		nodes, coreCalls, tfCalls int
		actions, tfActions        string
	}
	var rows []row
	for _, n := range []int{1, 16, 256} {
		name := fmt.Sprintf("bench%d", n)
		var r row
		r.nodes = n
		cfg := gpuClusterConfig(h, acctest.AWSManagedKeys, name, fmt.Sprintf("  node_count = %d\n  zone_id = \"mec1-az1\"\n  efa_interfaces = 1", n))
		resource.Test(t, resource.TestCase{
			PreCheck:                 func() { acctest.PreCheck(t) },
			ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
			Steps: []resource.TestStep{
				{
					Config: cfg,
					Check: resource.ComposeAggregateTestCheckFunc(
						resource.TestCheckResourceAttr(gpuClusterResource, "node_ids.#", fmt.Sprint(n)),
						func(*terraform.State) error {
							// What Read calls: one core Find.
							env := platformEnv(t, h)
							h.Shim.ResetLog()
							if _, err := env.FindGPUCluster(context.Background(), name, ""); err != nil {
								return err
							}
							var acts []string
							for _, c := range h.Shim.Log() {
								if c.Service == "ec2" {
									r.coreCalls++
									acts = append(acts, c.Action)
								}
							}
							r.actions = strings.Join(acts, ", ")
							h.Shim.ResetLog()
							return nil
						},
					),
				},
				{
					// terraform refresh through the CLI: every EC2 call the
					// provider makes for it.
					RefreshState: true,
					Check: func(*terraform.State) error {
						counts := map[string]int{}
						for _, c := range h.Shim.Log() {
							if !c.Fixture {
								r.tfCalls++
								counts[c.Service+"."+c.Action]++
							}
						}
						var parts []string
						for _, k := range slices.Sorted(maps.Keys(counts)) {
							parts = append(parts, fmt.Sprintf("%s x%d", k, counts[k]))
						}
						r.tfActions = strings.Join(parts, ", ")
						return nil
					},
				},
			},
		})
		rows = append(rows, r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| nodes | AWS calls of one refresh (Read) | calls |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %d | %s |\n", r.nodes, r.coreCalls, r.actions)
	}
	fmt.Fprintf(&b, "\nA RefreshState test step (terraform refresh, then the plan the test framework runs after it, ModifyPlan's checks included):\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "  %d nodes: %d calls: %s\n", r.nodes, r.tfCalls, r.tfActions)
	}
	t.Log(b.String())
	for _, r := range rows {
		if r.coreCalls > 3 {
			t.Errorf("refresh of %d nodes made %d EC2 calls, want at most 3", r.nodes, r.coreCalls)
		}
	}
}

// TestAccGPUCluster_planFromCore: the plan is the core's change set, as
// Pulumi's Diff. A new AMI behind the same SSM parameter is an in-place
// update that rolls the node; setting vpc_id replaces the cluster.
func TestAccGPUCluster_planFromCore(t *testing.T) {
	h := acctest.Setup(t)
	ctx := context.Background()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	images, err := c.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}})
	if err != nil || len(images.Images) < 2 {
		t.Fatalf("describing images: %v", err)
	}
	amiA, amiB := aws.ToString(images.Images[0].ImageId), aws.ToString(images.Images[1].ImageId)
	vpcs, err := c.EC2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []ec2types.Filter{{Name: aws.String("is-default"), Values: []string{"true"}}}})
	if err != nil || len(vpcs.Vpcs) == 0 {
		t.Fatalf("default VPC: %v", err)
	}
	const param = "/mlplatform-test/tf-gpu-image"
	putImage := func(ami string) {
		if _, err := c.SSM.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(param), Value: aws.String(ami), Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatalf("putting %s: %v", param, err)
		}
	}
	putImage(amiA)
	cfg := func(extra string) string {
		return strings.Replace(gpuClusterConfig(h, acctest.AWSManagedKeys, "core", "  node_count = 1\n  zone_id = \"mec1-az1\"\n"+extra),
			`"/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"`, fmt.Sprintf("%q", param), 1)
	}
	var before []string
	remember := func(s *terraform.State) (err error) { before, err = clusterNodeIDs(s); return err }
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				Config: cfg(""),
				Check:  resource.ComposeAggregateTestCheckFunc(resource.TestCheckResourceAttr(gpuClusterResource, "image_id", amiA), remember),
			},
			{
				PreConfig: func() { putImage(amiB) },
				Config:    cfg(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(gpuClusterResource, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(gpuClusterResource, tfjsonpath.New("image_id"), knownvalue.StringExact(amiB)),
					plancheck.ExpectUnknownValue(gpuClusterResource, tfjsonpath.New("node_ids")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(gpuClusterResource, "image_id", amiB),
					func(s *terraform.State) error {
						ids, err := clusterNodeIDs(s)
						if err != nil {
							return err
						}
						if len(ids) != 1 || slices.Equal(ids, before) {
							return fmt.Errorf("nodes %v (were %v): want the node rolled onto %s", ids, before, amiB)
						}
						return nil
					},
				),
			},
			{
				Config: cfg(fmt.Sprintf("  vpc_id = %q\n", aws.ToString(vpcs.Vpcs[0].VpcId))),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(gpuClusterResource, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: checkLiveNodes(t, h, "core", 1),
			},
		},
	})
}
