package conformance

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/mlplatform/mlplatform/acctest"
)

// orchestrator.eks on both front ends, with values known only at apply:
// the cluster is read (DescribeCluster) and its residency checked at
// apply before the first write, as at plan when its name is known; the
// nodes' access entry is made at apply; the NodeConfig in the user data
// carries the labels. The nodes' side (nodeadm, the kubelet, hwprobe on
// the Node) is not played here: the validation gate does not wait.

const (
	eksConformanceCluster = "conf-eks"
	eksNodesProfile       = "eks-nodes"
)

// makeEKSCluster creates the EKS cluster and the nodes' instance profile
// (fixtures: not the front end's writes).
func makeEKSCluster(t *testing.T, h *acctest.Harness, _ *fixtures) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.CreateEKSCluster(ctx, eksConformanceCluster); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreateInstanceProfile(ctx, eksNodesProfile); err != nil {
		t.Fatal(err)
	}
}

// gpuEKSInputs is gpuInputs with volumes under the customer managed key
// (the AE default), a validation block that does not wait (no node plays
// the gate here), the nodes' instance profile, and orchestrator.eks
// joining cluster with labels (values or unknown).
func gpuEKSInputs(name string, cluster any, labels map[string]any) func(*fixtures) map[string]any {
	return func(f *fixtures) map[string]any {
		eks := map[string]any{"cluster_name": cluster}
		if labels != nil {
			eks["labels"] = labels
		}
		return gpuInputs(name, map[string]any{
			"kms_key_arn":      f.key,
			"instance_profile": eksNodesProfile,
			"validation":       map[string]any{"wait": false, "reports_s3_uri": "s3://" + uaeBucket + "/reports/", "reports_kms_key_arn": f.key},
			"orchestrator":     map[string]any{"eks": eks},
		})(f)
	}
}

// wantEKSJoin checks what the apply made for the nodes to join cluster:
// the nodes' role's EC2_LINUX access entry, and the NodeConfig in the
// launch template's user data naming the cluster and carrying each label
// of labels (KEY=VALUE).
func wantEKSJoin(name, cluster string, labels ...string) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		entries := h.EKSAccessEntries(cluster)
		var linux int
		for principal, e := range entries {
			if strings.HasSuffix(principal, ":role/"+eksNodesProfile) && e.Type == "EC2_LINUX" {
				linux++
			}
		}
		if linux != 1 {
			return fmt.Errorf("EKS cluster %s: access entries %+v, want the EC2_LINUX entry of role %s", cluster, entries, eksNodesProfile)
		}
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			return err
		}
		out, err := c.EC2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String("mlplatform-" + name), Versions: []string{"$Latest"}})
		if err != nil {
			return err
		}
		if len(out.LaunchTemplateVersions) != 1 || out.LaunchTemplateVersions[0].LaunchTemplateData == nil {
			return fmt.Errorf("no latest version of launch template mlplatform-%s", name)
		}
		raw, err := base64.StdEncoding.DecodeString(aws.ToString(out.LaunchTemplateVersions[0].LaunchTemplateData.UserData))
		if err != nil {
			return fmt.Errorf("launch template mlplatform-%s: user data: %w", name, err)
		}
		wants := append([]string{"application/node.eks.aws", "kind: NodeConfig", `name: "` + cluster + `"`}, labels...)
		if m := missing(string(raw), wants); len(m) > 0 {
			return fmt.Errorf("launch template mlplatform-%s: user data lacks %q:\n%s", name, m, raw)
		}
		return nil
	}
}

func eksScenarios() []scenario {
	return []scenario{
		{
			name: "gpu_cluster/eks unknown cluster name", kind: gpuCluster, resource: "conf-eks-unk",
			steps: []step{
				{name: "a cluster that does not exist, named only at apply: refused at apply, zero writes", outOfBand: makeEKSCluster,
					inputs: gpuEKSInputs("conf-eks-unk", unknown{"no-such-cluster"}, nil),
					want:   refused, refusedAtApply: true, messages: []string{"EKS cluster not found", "no-such-cluster"}, noWrites: true},
				{name: "the cluster and a label value known only at apply: created, the nodes' access entry made, the labels in the NodeConfig",
					inputs: gpuEKSInputs("conf-eks-unk", unknown{eksConformanceCluster}, map[string]any{"team.example.com/owner": unknown{"vision"}, "tier": "gpu"}),
					want:   created, check: func(ctx context.Context, h *acctest.Harness, f *fixtures) error {
						if err := wantNodes("conf-eks-unk", 1, "mec1-az1", "")(ctx, h, f); err != nil {
							return err
						}
						return wantEKSJoin("conf-eks-unk", eksConformanceCluster, "team.example.com/owner=vision", "tier=gpu")(ctx, h, f)
					}},
			},
		},
	}
}
