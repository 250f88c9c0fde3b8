package pulumi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// The orchestrator input's kubernetes reaches the core as the Terraform
// front end's orchestrator.kubernetes does: the same spec, the same
// unknown paths.
func TestKubeSpec(t *testing.T) {
	const sec = "arn:aws:secretsmanager:me-central-1:123456789012:secret:k-AbCdEf"
	full := &Orchestrator{Kubernetes: &OrchestratorKubernetes{KubeconfigSecretARN: sec, JoinTokenSecretARN: sec, Context: ptr("gate"), Labels: map[string]string{"team.example.com/owner": "vision"}}}
	for _, tc := range []struct {
		name    string
		in      *Orchestrator
		unknown []string
		want    *platform.KubeSpec
	}{
		{"none", nil, nil, nil},
		{"orchestrator with eks", &Orchestrator{EKS: &OrchestratorEKS{}}, nil, nil},
		{"orchestrator unknown as a whole", nil, []string{"orchestrator"}, nil},
		{"kubernetes unknown as a whole", &Orchestrator{}, []string{platform.KubePath}, &platform.KubeSpec{}},
		{"known", full, nil, &platform.KubeSpec{KubeconfigSecretARN: sec, JoinTokenSecretARN: sec, Context: "gate", Labels: map[string]string{"team.example.com/owner": "vision"}}},
		{"a label value unknown", full, []string{platform.KubePath + ".labels.team.example.com/owner"}, &platform.KubeSpec{KubeconfigSecretARN: sec, JoinTokenSecretARN: sec, Context: "gate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kubeSpec(tc.in, tc.unknown); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("kubeSpec = %+v, want %+v", got, tc.want)
			}
		})
	}
	computed := property.New(property.Computed)
	inputs := property.NewMap(map[string]property.Value{"orchestrator": property.New(property.NewMap(map[string]property.Value{
		"kubernetes": property.New(property.NewMap(map[string]property.Value{"kubeconfigSecretArn": computed, "joinTokenSecretArn": property.New(sec),
			"labels": property.New(property.NewMap(map[string]property.Value{"tier": computed}))})),
	}))})
	u := wholeListUnknowns(inputs)
	args := &Orchestrator{Kubernetes: &OrchestratorKubernetes{JoinTokenSecretARN: sec, Labels: map[string]string{"tier": ""}}}
	want := []string{platform.KubePath + ".kubeconfig_secret_arn", platform.KubePath + ".labels"}
	g := GpuClusterArgs{Orchestrator: args, Validation: &GpuValidation{}}.spec(u)
	f := CpuFootprintArgs{Orchestrator: args, Validation: &GpuValidation{}}.spec(u)
	for _, s := range []struct {
		name    string
		kube    *platform.KubeSpec
		unknown []string
	}{{"GPU cluster", g.Kube, g.Unknown}, {"CPU footprint", f.Kube, f.Unknown}} {
		var under []string
		for _, p := range s.unknown {
			if strings.HasPrefix(p, "orchestrator") {
				under = append(under, p)
			}
		}
		if !reflect.DeepEqual(s.kube, &platform.KubeSpec{JoinTokenSecretARN: sec}) || !reflect.DeepEqual(under, want) {
			t.Errorf("%s: spec %+v, unknown %q; want unknown %q", s.name, s.kube, under, want)
		}
	}
}

// testKubeconfig is a kubeconfig for server with a fresh CA and a token
// (or, with exec, a command).
func testKubeconfig(t *testing.T, server string, exec bool) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	user := "    token: kube-test-token-value\n"
	if exec {
		user = "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: kubelogin\n"
	}
	return fmt.Sprintf("apiVersion: v1\nkind: Config\ncurrent-context: gate\nclusters:\n- name: c\n  cluster:\n    server: %s\n    certificate-authority-data: %s\ncontexts:\n- name: gate\n  context: {cluster: c, user: gate}\nusers:\n- name: gate\n  user:\n%s",
		server, base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), user)
}

// Check runs the core's orchestrator.kubernetes checks on both resources:
// the kubeconfig read from its secret, its server's location, an exec
// user, a second orchestrator, on the Pulumi property paths; values not
// known yet are left to the apply. Nothing is written.
func TestCheckKubernetes(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	ctx := context.Background()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("kube-reports"),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(acctest.Region)}}); err != nil {
		t.Fatal(err)
	}
	k, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	key := aws.ToString(k.KeyMetadata.Arn)
	secret := func(name, value string) string {
		out, err := acctest.SecretsManager(c).CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value), KmsKeyId: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ARN)
	}
	// moto's default VPC is 172.31.0.0/16.
	inVPC := secret("kube/in-vpc", testKubeconfig(t, "https://172.31.0.10:6443", false))
	public := secret("kube/public", testKubeconfig(t, "https://k8s.example.com:6443", false))
	execUser := secret("kube/exec", testKubeconfig(t, "https://172.31.0.10:6443", true))
	token := secret("kube/token", "abcdef.0123456789abcdef")
	h.Shim.ResetLog()

	s := newServer(t, h, nil)
	computed := property.New(property.Computed)
	validation := property.New(property.NewMap(map[string]property.Value{
		"wait": property.New(false), "reportsS3Uri": property.New("s3://kube-reports/r/"), "reportsKmsKeyArn": property.New(key)}))
	kube := func(kubeconfig property.Value) property.Value {
		return property.New(property.NewMap(map[string]property.Value{"kubeconfigSecretArn": kubeconfig, "joinTokenSecretArn": property.New(token)}))
	}
	orchestrator := func(fields map[string]property.Value) property.Value { return property.New(property.NewMap(fields)) }
	resources := []struct {
		typ    string
		inputs func(o property.Value) property.Map
	}{
		{"GpuCluster", func(o property.Value) property.Map {
			return gpuClusterInputs("kube", 1, map[string]property.Value{"kmsKeyArn": property.New(key), "orchestrator": o, "validation": validation})
		}},
		{"CpuFootprint", func(o property.Value) property.Map {
			return property.NewMap(map[string]property.Value{
				"name": property.New("kube"), "instanceType": property.New("c7i.large"),
				"minSize": property.New(1.0), "maxSize": property.New(2.0), "desiredCapacity": property.New(1.0),
				"rootVolume": property.New(property.NewMap(map[string]property.Value{"sizeGib": property.New(20.0)})),
				"kmsKeyArn":  property.New(key), "orchestrator": o, "validation": validation,
			})
		}},
	}
	for _, r := range resources {
		for _, tc := range []struct {
			name           string
			orchestrator   property.Value
			property, want string // want "": no failure
		}{
			{"known", orchestrator(map[string]property.Value{"kubernetes": kube(property.New(inVPC))}), "", ""},
			{"kubernetes not known yet", orchestrator(map[string]property.Value{"kubernetes": computed}), "", ""},
			{"kubeconfig secret not known yet", orchestrator(map[string]property.Value{"kubernetes": kube(computed)}), "", ""},
			{"server outside", orchestrator(map[string]property.Value{"kubernetes": kube(property.New(public))}),
				"orchestrator.kubernetes.kubeconfigSecretArn", "kube-server-region"},
			{"exec user", orchestrator(map[string]property.Value{"kubernetes": kube(property.New(execUser))}),
				"orchestrator.kubernetes.kubeconfigSecretArn", "runs a command"},
			{"eks and kubernetes", orchestrator(map[string]property.Value{"kubernetes": kube(property.New(inVPC)),
				"eks": property.New(property.NewMap(map[string]property.Value{"clusterName": computed, "createAccessEntry": property.New(false)}))}),
				"orchestrator", "Two orchestrators"},
		} {
			t.Run(r.typ+"/"+tc.name, func(t *testing.T) {
				check, err := s.Check(p.CheckRequest{Urn: urn(r.typ, "kube"), Inputs: r.inputs(tc.orchestrator)})
				if err != nil {
					t.Fatalf("check: %v", err)
				}
				if tc.want == "" {
					if len(check.Failures) > 0 {
						t.Errorf("failures = %+v, want none", check.Failures)
					}
					return
				}
				found := false
				for _, f := range check.Failures {
					found = found || f.Property == tc.property && strings.Contains(f.Reason, tc.want)
				}
				if !found {
					t.Errorf("failures = %+v, want one on %s containing %q", check.Failures, tc.property, tc.want)
				}
			})
		}
	}
	assertNoWrites(t, h)
}
