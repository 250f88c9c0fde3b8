package conformance

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
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mlplatform/mlplatform/acctest"
)

// orchestrator.kubernetes on both front ends, with the kubeconfig's secret
// known only at apply: a secret outside the jurisdiction is refused at
// apply before the first write; one in the region, whose kubeconfig names
// a server in a VPC of the region, is read at apply, and the nodes' user
// data carries the kubeadm JoinConfiguration (its endpoint, the CA pin,
// the labels) without a token. The nodes' side (kubeadm, the kubelet) is
// not played here: the validation gate does not wait.

// makeKubeSecrets stores a kubeconfig whose server is in the default VPC
// (172.31.0.0/16) in the region, one in eu-west-1, and a join token
// (fixtures: not the front end's writes).
func makeKubeSecrets(t *testing.T, h *acctest.Harness, f *fixtures) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := fmt.Sprintf("apiVersion: v1\nkind: Config\ncurrent-context: gate\nclusters:\n- name: c\n  cluster:\n    server: https://172.31.0.10:6443\n    certificate-authority-data: %s\ncontexts:\n- name: gate\n  context: {cluster: c, user: gate}\nusers:\n- name: gate\n  user:\n    token: conformance-token\n",
		base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	if f.secrets == nil {
		f.secrets = map[string]string{}
	}
	for _, s := range []struct{ region, name, value string }{
		{acctest.Region, "kube/kubeconfig", kubeconfig}, {"eu-west-1", "kube/kubeconfig-eu", kubeconfig}, {acctest.Region, "kube/join-token", "abcdef.0123456789abcdef"},
	} {
		c, err := h.Clients(ctx, s.region)
		if err != nil {
			t.Fatal(err)
		}
		kmsKey := f.key
		if s.region != acctest.Region {
			k, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{})
			if err != nil {
				t.Fatal(err)
			}
			kmsKey = aws.ToString(k.KeyMetadata.Arn)
		}
		out, err := acctest.SecretsManager(c).CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(s.name), SecretString: aws.String(s.value), KmsKeyId: aws.String(kmsKey)})
		if err != nil {
			t.Fatalf("creating secret %s: %v", s.name, err)
		}
		f.secrets[s.name] = aws.ToString(out.ARN)
	}
}

// gpuKubeInputs is gpuInputs joining the self-managed cluster with the
// kubeconfig of secret name, known only at apply.
func gpuKubeInputs(name, kubeconfig string) func(*fixtures) map[string]any {
	return func(f *fixtures) map[string]any {
		return gpuInputs(name, map[string]any{
			"kms_key_arn": f.key,
			"validation":  map[string]any{"wait": false, "reports_s3_uri": "s3://" + uaeBucket + "/reports/", "reports_kms_key_arn": f.key},
			"orchestrator": map[string]any{"kubernetes": map[string]any{
				"kubeconfig_secret_arn": unknown{f.secrets[kubeconfig]},
				"join_token_secret_arn": f.secrets["kube/join-token"],
				"labels":                map[string]any{"tier": "gpu"},
			}},
		})(f)
	}
}

// wantKubeadmJoin checks the launch template's user data carries the
// JoinConfiguration for the kubeconfig's server, with the label and
// without the token.
func wantKubeadmJoin(name string) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, f *fixtures) error {
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
		wants := []string{"kind: JoinConfiguration", `apiServerEndpoint: \"172.31.0.10:6443\"`, "caCertHashes", "tier=gpu", f.secrets["kube/join-token"]}
		if m := missing(string(raw), wants); len(m) > 0 {
			return fmt.Errorf("launch template mlplatform-%s: user data lacks %q:\n%s", name, m, raw)
		}
		if m := missing(string(raw), []string{"abcdef.0123456789abcdef"}); len(m) == 0 {
			return fmt.Errorf("launch template mlplatform-%s: the user data carries the join token", name)
		}
		return nil
	}
}

func kubeScenarios() []scenario {
	return []scenario{
		{
			name: "gpu_cluster/kubernetes kubeconfig secret known at apply", kind: gpuCluster, resource: "conf-kube-unk",
			steps: []step{
				{name: "a kubeconfig secret outside the jurisdiction, named only at apply: refused at apply, zero writes", outOfBand: makeKubeSecrets,
					inputs: gpuKubeInputs("conf-kube-unk", "kube/kubeconfig-eu"),
					want:   refused, refusedAtApply: true, messages: []string{"arn-region", "eu-west-1"}, noWrites: true},
				{name: "one in the region, named only at apply: created, the JoinConfiguration in the user data",
					inputs: gpuKubeInputs("conf-kube-unk", "kube/kubeconfig"),
					want:   created, check: func(ctx context.Context, h *acctest.Harness, f *fixtures) error {
						if err := wantNodes("conf-kube-unk", 1, "mec1-az1", "")(ctx, h, f); err != nil {
							return err
						}
						return wantKubeadmJoin("conf-kube-unk")(ctx, h, f)
					}},
			},
		},
	}
}
