package platform_test

import (
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// The embedded AWS certificates are what their records say: RSA-2048,
// self-signed with a signature that verifies (a changed byte fails it),
// and the recorded SHA-256 of the DER.
func TestAWSIdentityCertificates(t *testing.T) {
	all := platform.AWSIdentityCertificates()
	if len(all) == 0 {
		t.Fatal("no embedded certificates")
	}
	for _, c := range all {
		certs, err := platform.DefaultTrustedCertificates(c.Region)
		if err != nil || len(certs) != 1 {
			t.Fatalf("%s: %d certificates, %v", c.Region, len(certs), err)
		}
		x := certs[0]
		if sum := sha256.Sum256(x.Raw); hex.EncodeToString(sum[:]) != c.SHA256 {
			t.Errorf("%s: SHA-256 %x, recorded %s", c.Region, sum, c.SHA256)
		}
		if k, ok := x.PublicKey.(*rsa.PublicKey); !ok || k.N.BitLen() != 2048 {
			t.Errorf("%s: key %T, want RSA-2048", c.Region, x.PublicKey)
		}
		if err := x.CheckSignature(x.SignatureAlgorithm, x.RawTBSCertificate, x.Signature); err != nil {
			t.Errorf("%s: self-signature: %v", c.Region, err)
		}
		if x.Subject.Organization[0] != "Amazon Web Services LLC" || x.NotAfter.Before(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("%s: subject %s, not after %s", c.Region, x.Subject, x.NotAfter)
		}
	}
	// me-central-1's certificate is not embedded: no checkable copy.
	if got, err := platform.DefaultTrustedCertificates("me-central-1"); err != nil || len(got) != 0 {
		t.Errorf("me-central-1: %d certificates, %v; want none", len(got), err)
	}
	if !slices.Equal(platform.DefaultCertificateRegions(), []string{"us-east-1", "us-west-2", "eu-central-1"}) {
		t.Errorf("regions %v", platform.DefaultCertificateRegions())
	}
}

// Under AWS's certificates a document signed by the tests' key is
// rejected; with the test certificate configured it is accepted.
func TestGateDefaultCertificates(t *testing.T) {
	signer, err := acctest.NewNodeSigner()
	if err != nil {
		t.Fatal(err)
	}
	launch := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	f := &gateFixture{t: t, signer: signer, profile: "name = \"train-a\"\n", launch: launch}
	const acct = "123456789012"
	node := []platform.ExpectedNode{{Index: 0, InstanceID: "i-00000000000000000", Zone: "me-central-1a", ZoneID: "mec1-az1", LaunchTime: launch}}
	rep := []platform.ReportObject{{Key: "i-00000000000000000/20261123T060300Z.json",
		Body: f.report("i-00000000000000000", acct, "me-central-1a", signer, check{ID: "gpu.count", Status: "pass", Expected: "8", Observed: "8"})}}
	aws, err := platform.DefaultTrustedCertificates("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		trusted []*x509.Certificate
		action  string
		summary string
	}{
		{"AWS's certificate", aws, platform.GateFail, "identity document does not verify"},
		{"test certificate configured", []*x509.Certificate{signer.Cert}, platform.GatePass, "1 checks passed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := &platform.Gate{Spec: platform.ValidationSpec{}.WithDefaults(), ProfileSHA256: platform.ProfileSHA256(f.profile), Trusted: tt.trusted,
				Region: "me-central-1", AccountID: acct, ZoneIDs: map[string]string{"me-central-1a": "mec1-az1"}}
			res := g.Decide(node, rep, launch.Add(5*time.Minute), launch.Add(20*time.Minute))
			if res.Action != tt.action || !strings.Contains(res.Nodes[0].Summary, tt.summary) {
				t.Fatalf("%s: %+v", res.Action, res.Nodes[0])
			}
		})
	}
}
