package provider_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// orchestrator.kubernetes's reads at apply under faults: the kubeconfig's
// secret (GetSecretValue) and the region's VPCs (DescribeVpcs, where the
// server's address must be). A refusal (access denied) fails the create
// before its first write, its message naming the secret and never the
// kubeconfig's credentials; a throttled read is retried and the create
// goes on, the JoinConfiguration in the launch template.
func TestAccGPUCluster_kubeReadFaults(t *testing.T) {
	h := acctest.Setup(t)
	createBucket(t, h, "uae-hwprobe-reports", acctest.Region)
	key := createKey(t, h, acctest.Region)
	// moto's default VPC is 172.31.0.0/16.
	kubeconfig := createSecretString(t, h, acctest.Region, "kube/gate-kubeconfig", testKubeconfig(t, "https://172.31.0.10:6443", false), key)
	token := createSecretString(t, h, acctest.Region, "kube/join-token", "abcdef.0123456789abcdef", key)
	env := platformEnv(t, h)
	spec := func(name string) platform.GPUClusterSpec {
		return platform.GPUClusterSpec{Name: name, InstanceType: "p5en.48xlarge", NodeCount: 1, ZoneID: "mec1-az1", EFAInterfaces: aws.Int(1),
			Image: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", RootVolume: platform.Volume{SizeGiB: 100},
			Validation: &platform.ValidationSpec{ReportsS3URI: "s3://uae-hwprobe-reports/clusters/", ReportsKMSKeyARN: key}, // wait = false: no gate
			Kube:       &platform.KubeSpec{KubeconfigSecretARN: kubeconfig, JoinTokenSecretARN: token}}
	}
	for _, tc := range []struct {
		name, service, action, code string
		status                      int
		want                        string // "": the create succeeds
	}{
		{name: "kubeconfig access denied", service: "secretsmanager", action: "GetSecretValue", code: "AccessDeniedException", want: "kube/gate-kubeconfig"},
		{name: "VPCs access denied", service: "ec2", action: "DescribeVpcs", code: "UnauthorizedOperation", status: http.StatusForbidden, want: "describing VPCs"},
		{name: "kubeconfig throttled", service: "secretsmanager", action: "GetSecretValue", code: "ThrottlingException", status: http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "kube-fault-" + strings.ReplaceAll(tc.name, " ", "-")
			h.Shim.ResetLog()
			h.Shim.Inject(acctest.Fault{Service: tc.service, Action: tc.action, Code: tc.code, Message: "injected", Status: tc.status, Times: 1})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c, err := env.CreateGPUCluster(ctx, spec(name), platform.GPUClusterOptions{})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("create: %v, want an error naming %q", err, tc.want)
				}
				if strings.Contains(err.Error(), "kube-test-token-value") {
					t.Errorf("the error shows the kubeconfig's token: %v", err)
				}
				checkNoWrites(t, h)
				return
			}
			if err != nil {
				t.Fatalf("create after a throttled read: %v", err)
			}
			if len(c.Nodes) != 1 {
				t.Errorf("%d nodes, want 1", len(c.Nodes))
			}
			t.Cleanup(func() {
				if err := env.DeleteGPUCluster(context.Background(), platform.GPUClusterSpec{Name: name, CreationToken: c.CreationToken}, platform.GPUClusterOptions{}); err != nil {
					t.Errorf("delete: %v", err)
				}
			})
			if n := len(h.Shim.Calls("secretsmanager", "GetSecretValue")); n < 2 {
				t.Errorf("GetSecretValue called %d times, want the throttled call retried", n)
			}
		})
	}
}
