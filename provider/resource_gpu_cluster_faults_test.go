package provider_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// checkClusterGone checks in EC2 that nothing of cluster name is left: no
// live node, no launch template, no placement group.
func checkClusterGone(t *testing.T, h *acctest.Harness, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		c, err := fixtureEnv(t, h).FindGPUCluster(context.Background(), name, "")
		if errors.Is(err, platform.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("GPU cluster %s left behind: %d live nodes, launch template %q, placement group %q (%s)", name, len(c.Nodes), c.LaunchTemplateID, c.PlacementGroupName, c.PlacementGroupState)
	}
}

// checkStateMatchesEC2 checks live instances == state == n.
func checkStateMatchesEC2(t *testing.T, h *acctest.Harness, name string, n int) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		ids, err := clusterNodeIDs(s)
		if err != nil {
			return err
		}
		live, err := liveGPUNodes(t, h, name)
		if err != nil {
			return err
		}
		if len(live) != n || len(ids) != n {
			return fmt.Errorf("want %d nodes: %d live in EC2, %d in state", n, len(live), len(ids))
		}
		for _, node := range live {
			found := false
			for _, id := range ids {
				found = found || id == node.InstanceID
			}
			if !found {
				return fmt.Errorf("live node %s is not in state", node.InstanceID)
			}
		}
		return nil
	}
}

// Defect 1: a create whose context expires while it waits for the nodes to
// run (as with Ctrl-C: the framework cancels the context) records every
// node it launched, read back with a fresh context. Every node was launched
// from the declared template, so the resource is whole: not tainted, the
// next plan is empty, and destroy leaves nothing.
func TestAccGPUCluster_createTimeoutWhileWaiting(t *testing.T) {
	h := acctest.Setup(t)
	// The waiter's DescribeInstances (by instance id) answers after the
	// create timeout; the lookup by tag is not slowed.
	h.Shim.AddRule(acctest.FaultRule{Service: "ec2", Action: "DescribeInstances", Delay: 20 * time.Second, Times: 1,
		Match: func(r *acctest.Request) bool { return r.Form.Get("InstanceId.1") != "" }})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkClusterGone(t, h, "interrupted"),
		Steps: []resource.TestStep{{
			Config: gpuClusterConfig(h, acctest.AWSManagedKeys, "interrupted", "  node_count = 2\n  zone_id = \"mec1-az1\"\n  timeouts { create = \"12s\" }"),
			Check: resource.ComposeAggregateTestCheckFunc(
				checkStateMatchesEC2(t, h, "interrupted", 2),
				resource.TestCheckResourceAttrSet(gpuClusterResource, "creation_token"),
				func(*terraform.State) error {
					if len(h.Shim.Calls("ec2", "RunInstances")) != 1 {
						return fmt.Errorf("want 1 RunInstances, got %d", len(h.Shim.Calls("ec2", "RunInstances")))
					}
					return nil
				},
			),
		}},
	})
	// Destroy is skipped when state is empty: check EC2 whatever state says.
	if err := checkClusterGone(t, h, "interrupted")(nil); err != nil {
		t.Error(err)
	}
}

// Defect 1: a create timeout during capacity back-off leaves the launch
// template and placement group in state (tainted), so destroy removes them.
func TestAccGPUCluster_createTimeoutDuringBackoff(t *testing.T) {
	h := acctest.Setup(t)
	az1, err := defaultSubnet(t, h, "mec1-az1")
	if err != nil {
		t.Fatal(err)
	}
	h.Shim.NoCapacityInSubnets(az1.ID)
	cfg := strings.Replace(gpuClusterConfig(h, acctest.AWSManagedKeys, "backoff", "  node_count = 2\n  zone_id = \"mec1-az1\"\n  timeouts { create = \"10s\" }"),
		`capacity_retry = { attempts = 2, initial_delay = "10ms" }`, `capacity_retry = { attempts = 20, initial_delay = "5s" }`, 1)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkClusterGone(t, h, "backoff"),
		Steps: []resource.TestStep{{
			Config:      cfg,
			ExpectError: regexp.MustCompile(`(?s)creating\s+GPU\s+cluster\s+\(backoff\).*waiting\s+to\s+retry\s+launch\s+in\s+mec1-az1.*deadline\s+exceeded`),
		}},
	})
	// Destroy is skipped when state is empty: check EC2 whatever state says.
	if err := checkClusterGone(t, h, "backoff")(nil); err != nil {
		t.Error(err)
	}
}

// Defects 1 and 4: DescribeInstances errors (500) after a good launch, more
// than the SDK's default 3 attempts absorb (4 here, to keep the backoff
// short), are retried by the client layer: the apply succeeds, nothing is
// tainted or replaced.
func TestAccGPUCluster_describeErrorsAfterLaunch(t *testing.T) {
	h := acctest.Setup(t)
	h.Shim.Inject(acctest.Fault{Service: "ec2", Action: "DescribeInstances", Code: "InternalError", Message: "injected", Status: 500, Times: 4,
		Match: func(r *acctest.Request) bool { return r.Form.Get("InstanceId.1") != "" && !r.Fixture }})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkClusterGone(t, h, "flaky"),
		Steps: []resource.TestStep{{
			Config: gpuClusterConfig(h, acctest.AWSManagedKeys, "flaky", "  node_count = 2\n  zone_id = \"mec1-az1\""),
			Check:  checkStateMatchesEC2(t, h, "flaky", 2),
		}},
	})
	// Destroy is skipped when state is empty: check EC2 whatever state says.
	if err := checkClusterGone(t, h, "flaky")(nil); err != nil {
		t.Error(err)
	}
}

// Defects 1 and 4: when the wait for running fails after a good launch
// (here an error no retry helps), the nodes are recorded, the resource is
// whole and not tainted, and the next apply does not replace it.
func TestAccGPUCluster_lostSightAfterLaunch(t *testing.T) {
	h := acctest.Setup(t)
	h.Shim.Inject(acctest.Fault{Service: "ec2", Action: "DescribeInstances", Code: "UnauthorizedOperation", Message: "injected", Status: 403, Times: 1,
		Match: func(r *acctest.Request) bool { return r.Form.Get("InstanceId.1") != "" && !r.Fixture }})
	var first []string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkClusterGone(t, h, "blind"),
		Steps: []resource.TestStep{
			{
				Config: gpuClusterConfig(h, acctest.AWSManagedKeys, "blind", "  node_count = 2\n  zone_id = \"mec1-az1\""),
				Check: resource.ComposeAggregateTestCheckFunc(checkStateMatchesEC2(t, h, "blind", 2), func(s *terraform.State) (err error) {
					if s.RootModule().Resources[gpuClusterResource].Primary.Tainted {
						return fmt.Errorf("a whole cluster was tainted")
					}
					first, err = clusterNodeIDs(s)
					return err
				}),
			},
			{
				// Re-apply: nothing is replaced.
				Config: gpuClusterConfig(h, acctest.AWSManagedKeys, "blind", "  node_count = 2\n  zone_id = \"mec1-az1\""),
				Check: resource.ComposeAggregateTestCheckFunc(checkStateMatchesEC2(t, h, "blind", 2), func(s *terraform.State) error {
					ids, err := clusterNodeIDs(s)
					if err != nil || strings.Join(ids, ",") != strings.Join(first, ",") {
						return fmt.Errorf("nodes %v became %v (%v)", first, ids, err)
					}
					if n := len(h.Shim.Calls("ec2", "RunInstances")); n != 1 {
						return fmt.Errorf("%d RunInstances, want 1", n)
					}
					return nil
				}),
			},
		},
	})
	// Destroy is skipped when state is empty: check EC2 whatever state says.
	if err := checkClusterGone(t, h, "blind")(nil); err != nil {
		t.Error(err)
	}
}

// The fault layer's lost answer and token replay: RunInstances succeeds at
// the emulator, the client sees a 500 and retries with the same client
// token, and gets the first launch's instances (as EC2 does): no double
// launch.
func TestAccGPUCluster_lostRunInstancesAnswer(t *testing.T) {
	h := acctest.Setup(t)
	h.Shim.ReplayClientTokens()
	h.Shim.LoseResponses("ec2", "RunInstances", 1)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkClusterGone(t, h, "lost"),
		Steps: []resource.TestStep{{
			Config: gpuClusterConfig(h, acctest.AWSManagedKeys, "lost", "  node_count = 2\n  zone_id = \"mec1-az1\""),
			Check: resource.ComposeAggregateTestCheckFunc(checkStateMatchesEC2(t, h, "lost", 2), func(*terraform.State) error {
				var sources []string
				for _, c := range h.Shim.Calls("ec2", "RunInstances") {
					sources = append(sources, c.Source)
				}
				// The lost answer, then the replay; the SDK may retry once
				// more when a connection drops while the replay is read, and
				// gets the replay again. Every answer comes from the fault
				// layer: the emulator launched once.
				if len(sources) < 2 || slices.ContainsFunc(sources, func(s string) bool { return s != "fault" }) {
					return fmt.Errorf("RunInstances answered by %v, want the lost answer, then only replays", sources)
				}
				return nil
			}),
		}},
	})
	// Destroy is skipped when state is empty: check EC2 whatever state says.
	if err := checkClusterGone(t, h, "lost")(nil); err != nil {
		t.Error(err)
	}
}

// Defect 9: a burst of throttling errors longer than the SDK's default 3
// attempts is absorbed by adaptive retry.
func TestAccGPUCluster_throttlingBurst(t *testing.T) {
	h := acctest.Setup(t)
	h.Shim.Throttle("ec2", "RunInstances", 4)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkClusterGone(t, h, "throttled"),
		Steps: []resource.TestStep{{
			Config: gpuClusterConfig(h, acctest.AWSManagedKeys, "throttled", "  node_count = 1\n  zone_id = \"mec1-az1\""),
			Check:  checkStateMatchesEC2(t, h, "throttled", 1),
		}},
	})
	// Destroy is skipped when state is empty: check EC2 whatever state says.
	if err := checkClusterGone(t, h, "throttled")(nil); err != nil {
		t.Error(err)
	}
}

// Defect 3: a create never adopts a cluster of the same name that it cannot
// prove it made; the other resource's cluster is untouched.
func TestAccGPUCluster_refusesForeignCluster(t *testing.T) {
	h := acctest.Setup(t)
	base := gpuClusterConfig(h, acctest.AWSManagedKeys, "shared", "  node_count = 1\n  zone_id = \"mec1-az1\"")
	second := strings.ReplaceAll(strings.SplitN(base, "resource \"mlplatform_gpu_cluster\" \"test\"", 2)[1], "{\n  name", "{\n  depends_on = [mlplatform_gpu_cluster.test]\n  name")
	var ids []string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkClusterGone(t, h, "shared"),
		Steps: []resource.TestStep{
			{
				Config: base,
				Check: func(s *terraform.State) (err error) {
					ids, err = clusterNodeIDs(s)
					return err
				},
			},
			{
				Config:      base + "\nresource \"mlplatform_gpu_cluster\" \"other\"" + second,
				ExpectError: regexp.MustCompile(`(?s)GPU\s+cluster\s+shared\s+already\s+exists.*cannot\s+prove\s+it\s+created\s+it.*import\s+it`),
			},
			{
				Config: base,
				Check: resource.ComposeAggregateTestCheckFunc(checkStateMatchesEC2(t, h, "shared", 1), func(s *terraform.State) error {
					now, err := clusterNodeIDs(s)
					if err != nil || strings.Join(now, ",") != strings.Join(ids, ",") {
						return fmt.Errorf("the first cluster's nodes %v became %v (%v)", ids, now, err)
					}
					if _, ok := s.RootModule().Resources["mlplatform_gpu_cluster.other"]; ok {
						return fmt.Errorf("the refused resource is in state")
					}
					return nil
				}),
			},
		},
	})
	// Destroy is skipped when state is empty: check EC2 whatever state says.
	if err := checkClusterGone(t, h, "shared")(nil); err != nil {
		t.Error(err)
	}
}

// Interrupt matrix (context cancel, as Ctrl-C) in the core, against the
// emulator: a create cancelled at each step records what exists (live ==
// recorded); if the record is lost (a killed provider) a new create refuses
// the leftovers and import recovers them; re-applying finishes the cluster
// (live == node_count, no duplicate) and deleting leaves nothing.
func TestAccGPUCluster_interruptMatrix(t *testing.T) {
	h := acctest.Setup(t)
	steps := []struct{ action, match string }{
		{"CreatePlacementGroup", ""},
		{"CreateLaunchTemplate", ""},
		{"RunInstances", ""},
		{"DescribeInstances", "InstanceId.1"}, // the wait for running
	}
	env := platformEnv(t, h)
	for i, st := range steps {
		t.Run(st.action, func(t *testing.T) {
			name := fmt.Sprintf("cut%d", i)
			h.Shim.ClearRules()
			h.Shim.ReplayClientTokens()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h.Shim.OnCall("ec2", st.action, func(r *acctest.Request) {
				if !r.Fixture && (st.match == "" || r.Form.Get(st.match) != "") {
					cancel() // Ctrl-C while the call is on the wire
				}
			})
			spec := platform.GPUClusterSpec{Name: name, InstanceType: "p5en.48xlarge", NodeCount: 2, ZoneID: "mec1-az1", EFAInterfaces: aws.Int(1),
				Image: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", RootVolume: platform.Volume{SizeGiB: 100}}
			c, cerr := env.CreateGPUCluster(ctx, spec, platform.GPUClusterOptions{})
			if cerr == nil {
				t.Fatalf("cancelled create succeeded")
			}
			h.Shim.ClearRules() // no more interrupts
			live, ferr := liveGPUNodes(t, h, name)
			if ferr != nil {
				t.Fatal(ferr)
			}
			recorded := 0
			if c != nil {
				recorded = len(c.Nodes)
			} else if _, ferr := fixtureEnv(t, h).FindGPUCluster(context.Background(), name, ""); !errors.Is(ferr, platform.ErrNotFound) {
				t.Fatalf("nothing recorded, but the cluster exists (%v): %v", ferr, cerr)
			}
			if recorded != len(live) {
				t.Fatalf("cut at %s: %d nodes recorded, %d live (%v)", st.action, recorded, len(live), cerr)
			}
			if c == nil {
				return
			}
			// A killed provider loses what it recorded: a new create refuses
			// the leftovers ("import it"); import reads the owner's token
			// back from EC2 and the next apply finishes the cluster.
			var ee *platform.NotOursError
			if _, err := env.CreateGPUCluster(context.Background(), spec, platform.GPUClusterOptions{}); !errors.As(err, &ee) {
				t.Fatalf("create over the leftovers of a killed create: %v, want a NotOursError", err)
			}
			found, err := env.FindGPUCluster(context.Background(), name, "")
			if err != nil || found.CreationToken != c.CreationToken {
				t.Fatalf("import reads token %q, recorded %q (%v)", found.CreationToken, c.CreationToken, err)
			}
			spec.CreationToken = found.CreationToken
			if _, err := env.UpdateGPUCluster(context.Background(), spec, platform.GPUClusterOptions{}); err != nil {
				t.Fatalf("re-apply: %v", err)
			}
			if live, _ = liveGPUNodes(t, h, name); len(live) != 2 {
				t.Fatalf("after re-apply: %d live nodes, want 2", len(live))
			}
			if err := env.DeleteGPUCluster(context.Background(), platform.GPUClusterSpec{Name: name, CreationToken: c.CreationToken}, platform.GPUClusterOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := checkClusterGone(t, h, name)(nil); err != nil {
				t.Fatal(err)
			}
			t.Logf("cut at %s: %d nodes recorded (%v); re-apply 2 live; delete 0 left", st.action, recorded, cerr)
		})
	}
}

// Destroy of one resource leaves another owner's nodes alone (the core's
// DeleteGPUCluster with a token that does not match).
func TestAccGPUCluster_deleteRefusesForeignToken(t *testing.T) {
	h := acctest.Setup(t)
	env := platformEnv(t, h)
	spec := platform.GPUClusterSpec{Name: "mine", InstanceType: "p5en.48xlarge", NodeCount: 1, ZoneID: "mec1-az1", EFAInterfaces: aws.Int(1),
		Image: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", RootVolume: platform.Volume{SizeGiB: 100}}
	c, err := env.CreateGPUCluster(context.Background(), spec, platform.GPUClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var oe *platform.OwnershipError
	if err := env.DeleteGPUCluster(context.Background(), platform.GPUClusterSpec{Name: "mine", CreationToken: "someone-else"}, platform.GPUClusterOptions{}); !errors.As(err, &oe) {
		t.Fatalf("delete with a foreign token: %v, want an ownership error", err)
	}
	out, err := ec2Client(t, h).DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: c.NodeIDs()})
	if err != nil || out.Reservations[0].Instances[0].State.Name != "running" {
		t.Fatalf("the owner's node was touched: %v", err)
	}
	if err := env.DeleteGPUCluster(context.Background(), platform.GPUClusterSpec{Name: "mine", CreationToken: c.CreationToken}, platform.GPUClusterOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Defects 2, 5, 10 and the zone check after a tag violation: bad input is
// refused at plan, on its attribute, before anything is written.
func TestAccGPUCluster_planValidation(t *testing.T) {
	h := acctest.Setup(t)
	cfg := func(extra string) string {
		return gpuClusterConfig(h, acctest.AWSManagedKeys, "bad", "  node_count = 1\n  zone_id = \"mec1-az1\"\n"+extra)
	}
	manyTags := "  tags = {\n"
	for i := range 60 {
		manyTags += fmt.Sprintf("    t%02d = \"v\"\n", i)
	}
	manyTags += "  }\n"
	var steps []resource.TestStep
	for _, tt := range []struct {
		config string
		want   string
	}{
		{strings.Replace(cfg(""), `tags          = { team = "ml-platform" }`, `tags          = { "mlplatform:cluster" = "other" }`, 1), `Reserved tag key.*mlplatform:cluster`},
		{strings.Replace(cfg(""), `tags          = { team = "ml-platform" }`, `tags          = { "aws:foo" = "x" }`, 1), `Reserved tag key.*aws:foo`},
		{strings.Replace(cfg(""), `tags          = { team = "ml-platform" }`, fmt.Sprintf(`tags          = { %q = "x" }`, strings.Repeat("k", 129)), 1), `Invalid tag key.*1 to 128`},
		{strings.Replace(cfg(""), `  tags          = { team = "ml-platform" }`, manyTags, 1), `Too many tags.*60 tags`},
		{strings.Replace(cfg(""), `root_volume   = { size_gib = 200 }`, `root_volume   = { size_gib = 200, iops = 4294970296 }`, 1), `Value out of range.*iops = 4294970296: use 1 to 256000`},
		{strings.Replace(cfg(""), `data_volumes  = [{ size_gib = 1000 }]`, `data_volumes  = [{ size_gib = 1000 }, { size_gib = 10, iops = -5 }]`, 1), `Value out of range.*iops = -5: use 1 to 256000`},
		{strings.Replace(cfg(""), `root_volume   = { size_gib = 200 }`, `root_volume   = { size_gib = 200, iops = 100 }`, 1), `IOPS out of range.*gp3 volumes take 3000 to 80000`},
		{strings.Replace(cfg(""), `data_volumes  = [{ size_gib = 1000 }]`, "data_volumes  = ["+strings.Repeat(`{ size_gib = 10 }, `, 22)+"]", 1), `Too many data volumes`},
		{strings.Replace(cfg(""), `"/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"`, `""`, 1), `Missing image`},
		{cfg(`  security_group_ids = ["default"]`), `Invalid security group id.*"default"`},
		{cfg(`  instance_profile = "not a profile!"`), `Invalid instance profile`},
		{cfg(`  capacity = { type = "spot", spot_max_price = "cheap" }`), `Invalid spot price`},
		{strings.Replace(cfg(""), `initial_delay = "10ms"`, `initial_delay = "1000h"`, 1), `capacity_retry.initial_delay.*up to 10m0s`},
		{cfg(`  timeouts { create = "0s" }`), `Invalid timeout`},
		{strings.Replace(cfg(""), `attempts = 2`, `attempts = 1000`, 1), `Value out of range.*capacity_retry.attempts = 1000: use 1 to 20`},
		{cfg(`  placement_group_name = ""`), `placement_group_name.*length`},
		// A required-tag violation must not switch off the zone check.
		{gpuClusterConfig(h, `required_tags = ["cost-center"]`, "bad", "  node_count = 1\n  zone_id = \"mec1-az2\""), `(?s)(required-tag.*not offered in mec1-az2|not offered in mec1-az2.*required-tag)`},
	} {
		steps = append(steps, resource.TestStep{Config: tt.config, PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)` + strings.ReplaceAll(tt.want, " ", `\s+`))})
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps:                    steps,
	})
	checkNoWrites(t, h)
}

// Review finding: security_group_ids and tags whose elements are unknown
// at plan (values of other resources), and provider default_tags unknown at
// plan with required_tags, plan fine and are checked at apply.
func TestAccGPUCluster_unknownElements(t *testing.T) {
	h := acctest.Setup(t)
	sg, err := ec2Client(t, h).CreateSecurityGroup(context.Background(), &ec2.CreateSecurityGroupInput{GroupName: aws.String("efa"), Description: aws.String("efa")})
	if err != nil {
		t.Fatal(err)
	}
	sgID := aws.ToString(sg.GroupId)
	provider := strings.Replace(h.ProviderConfig(acctest.AWSManagedKeys+"\n"+`required_tags = ["team", "owner"]`), "  residency {", "  default_tags = { owner = terraform_data.owner.output }\n\n  residency {", 1)
	cfg := provider + fmt.Sprintf(`
resource "terraform_data" "sg" {
  input = %q
}
resource "terraform_data" "owner" {
  input = "ml-platform"
}
resource "terraform_data" "team" {
  input = "research"
}
resource "mlplatform_gpu_cluster" "test" {
  name               = "unknowns"
  instance_type      = "p5en.48xlarge"
  image              = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
  node_count         = 1
  zone_id            = "mec1-az1"
  efa_interfaces     = 1
  security_group_ids = [terraform_data.sg.output]
  tags               = { team = terraform_data.team.output }
}
`, sgID)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkClusterGone(t, h, "unknowns"),
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: resource.ComposeAggregateTestCheckFunc(
				checkStateMatchesEC2(t, h, "unknowns", 1),
				resource.TestCheckResourceAttr(gpuClusterResource, "tags_all.team", "research"),
				resource.TestCheckResourceAttr(gpuClusterResource, "tags_all.owner", "ml-platform"),
				resource.TestCheckTypeSetElemAttr(gpuClusterResource, "security_group_ids.*", sgID),
			),
		}},
	})
	// Destroy is skipped when state is empty: check EC2 whatever state says.
	if err := checkClusterGone(t, h, "unknowns")(nil); err != nil {
		t.Error(err)
	}
}

// Defect 8: drift outside Terraform shows in the plan and the apply repairs
// it: a node tag removed, a node stopped, the placement group deleted, then
// the launch template deleted.
func TestAccGPUCluster_driftRepaired(t *testing.T) {
	h := acctest.Setup(t)
	ctx := context.Background()
	cfg := gpuClusterConfig(h, acctest.AWSManagedKeys, "drift", "  node_count = 2\n  zone_id = \"mec1-az1\"")
	repaired := resource.ComposeAggregateTestCheckFunc(
		checkStateMatchesEC2(t, h, "drift", 2),
		func(*terraform.State) error {
			c, err := fixtureEnv(t, h).FindGPUCluster(ctx, "drift", "")
			if err != nil {
				return err
			}
			if c.LaunchTemplateID == "" || c.PlacementGroupState == "" {
				return fmt.Errorf("launch template %q, placement group state %q: not repaired", c.LaunchTemplateID, c.PlacementGroupState)
			}
			for _, n := range c.Nodes {
				if n.State != "running" || n.Tags["team"] != "ml-platform" {
					return fmt.Errorf("node %s is %s with team = %q", n.InstanceID, n.State, n.Tags["team"])
				}
			}
			return nil
		},
	)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkClusterGone(t, h, "drift"),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: func(s *terraform.State) error {
					a := s.RootModule().Resources[gpuClusterResource].Primary.Attributes
					api := ec2Client(t, h)
					if _, err := api.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{a["nodes.0.id"]}, Tags: []ec2types.Tag{{Key: aws.String("team")}}}); err != nil {
						return err
					}
					if _, err := api.StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: []string{a["nodes.1.id"]}}); err != nil {
						return err
					}
					_, err := api.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String("mlplatform-drift")})
					return err
				},
				ExpectNonEmptyPlan: true,
			},
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(repaired, func(s *terraform.State) error {
					_, err := ec2Client(t, h).DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("mlplatform-drift")})
					return err
				}),
				ExpectNonEmptyPlan: true,
			},
			{Config: cfg, Check: repaired},
		},
	})
	// Destroy is skipped when state is empty: check EC2 whatever state says.
	if err := checkClusterGone(t, h, "drift")(nil); err != nil {
		t.Error(err)
	}
}

// Interrupt matrix, update and delete: a scale-out cancelled on the wire
// records every live node (a launch still under way at EC2 included) and
// the re-apply finishes it; a delete cancelled while terminating keeps the
// cluster findable and the next delete finishes.
func TestAccGPUCluster_interruptUpdateDelete(t *testing.T) {
	h := acctest.Setup(t)
	h.Shim.ReplayClientTokens()
	env := platformEnv(t, h)
	opts := platform.GPUClusterOptions{} // the environment polls every 50ms (platformEnv)
	spec := platform.GPUClusterSpec{Name: "cuts", InstanceType: "p5en.48xlarge", NodeCount: 1, ZoneID: "mec1-az1", EFAInterfaces: aws.Int(1),
		Image: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", RootVolume: platform.Volume{SizeGiB: 100}}
	c, err := env.CreateGPUCluster(context.Background(), spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	spec.CreationToken = c.CreationToken
	live := func() int {
		nodes, err := liveGPUNodes(t, h, "cuts")
		if err != nil {
			t.Fatal(err)
		}
		return len(nodes)
	}
	// describes counts the cluster's DescribeInstances calls the shim has
	// answered (the core's, not the fixtures').
	describes := func(calls []acctest.Call) int {
		n := 0
		for _, c := range calls {
			if c.Service == "ec2" && c.Action == "DescribeInstances" && !c.Fixture {
				n++
			}
		}
		return n
	}
	for _, action := range []string{"RunInstances", "DescribeInstances"} {
		ctx, cancel := context.WithCancel(context.Background())
		seen := make(chan int, 1) // DescribeInstances answered when the launch arrived
		h.Shim.OnCall("ec2", action, func(r *acctest.Request) {
			if !r.Fixture && (action == "RunInstances" || r.Form.Get("InstanceId.1") != "") {
				if action == "RunInstances" {
					select {
					case seen <- describes(h.Shim.Log()):
					default:
					}
				}
				cancel()
			}
		})
		var hold *acctest.Hold // nil: nothing held
		if action == "RunInstances" {
			// The launch reaches EC2 only after the client has given up
			// and read the cluster back: the record must wait for it. It
			// is held until the core's read-back has listed the nodes.
			hold = acctest.NewHold(t)
			h.Shim.AddRule(acctest.FaultRule{Service: "ec2", Action: "RunInstances", Times: 1, Hold: hold})
			go func() {
				wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
				defer wcancel()
				defer hold.Release()
				select {
				case before := <-seen:
					_ = h.Shim.WaitCalls(wctx, func(calls []acctest.Call) bool { return describes(calls) > before })
				case <-wctx.Done():
				}
			}()
		}
		spec.NodeCount++
		got, err := env.UpdateGPUCluster(ctx, spec, opts)
		cancel()
		landHeld(t, hold) // whatever was under way has landed
		h.Shim.ClearRules()
		h.Shim.ReplayClientTokens()
		if err == nil || got == nil || len(got.Nodes) != live() {
			t.Fatalf("scale-out cut at %s: err %v, recorded %v, %d live", action, err, got, live())
		}
		if _, err := env.UpdateGPUCluster(context.Background(), spec, opts); err != nil || live() != spec.NodeCount {
			t.Fatalf("re-apply after a cut at %s: %v, %d live, want %d", action, err, live(), spec.NodeCount)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.Shim.OnCall("ec2", "TerminateInstances", func(r *acctest.Request) {
		if !r.Fixture {
			cancel()
		}
	})
	if err := env.DeleteGPUCluster(ctx, platform.GPUClusterSpec{Name: "cuts", CreationToken: spec.CreationToken}, opts); err == nil {
		t.Fatal("a cancelled delete succeeded")
	}
	h.Shim.ClearRules()
	if _, err := env.FindGPUCluster(context.Background(), "cuts", ""); err != nil {
		t.Fatalf("after a cancelled delete the cluster cannot be found (state would keep it): %v", err)
	}
	if err := env.DeleteGPUCluster(context.Background(), platform.GPUClusterSpec{Name: "cuts", CreationToken: spec.CreationToken}, opts); err != nil {
		t.Fatal(err)
	}
	if err := checkClusterGone(t, h, "cuts")(nil); err != nil {
		t.Fatal(err)
	}
}
