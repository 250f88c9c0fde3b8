package platform_test

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/hwprobe/attest/attesttest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// TestGateAttestation: with a challenge, the gate takes only reports that
// answer it; requiring attestation, only reports whose NitroTPM document
// (a genuine COSE_Sign1 of a test Nitro PKI, verified by the code that
// verifies AWS's) chains to the trusted root, names the node, carries the
// challenge as nonce and the SHA-256 of the report's stored bytes as user
// data.
func TestGateAttestation(t *testing.T) {
	signer, err := acctest.NewNodeSigner()
	if err != nil {
		t.Fatal(err)
	}
	nitro, err := attesttest.New(attesttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rogue, err := attesttest.New(attesttest.Options{}) // a PKI nobody trusts
	if err != nil {
		t.Fatal(err)
	}
	launch := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	challenge := bytes.Repeat([]byte{0xc1}, 32)
	earlier := bytes.Repeat([]byte{0xe0}, 32)
	const acct, inst = "123456789012", "i-00000000000000000"
	node := []platform.ExpectedNode{{Index: 0, InstanceID: inst, Zone: "me-central-1a", ZoneID: "mec1-az1", LaunchTime: launch}}
	passing := check{ID: "gpu.count", Status: "pass", Expected: "8", Observed: "8"}
	nvlink := check{ID: "gpu.nvlink", Subject: "gpu3", Status: "fail", Expected: ">= 18", Observed: "17"}
	key := inst + "/20261123T060300Z.json"

	answer := func(ch []byte, checks ...check) []byte {
		f := &gateFixture{t: t, signer: signer, profile: "name = \"train-a\"\n", launch: launch, challenge: hex.EncodeToString(ch)}
		return f.report(inst, acct, "me-central-1a", signer, checks...)
	}
	doc := func(s *attesttest.Signer, module string, nonce, body []byte) []byte {
		sum := sha256.Sum256(body)
		b, err := s.Sign(attesttest.Document{ModuleID: module + "-tpm0000000000000000", Nonce: nonce, UserData: sum[:]})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	failing := answer(challenge, passing, nvlink)
	forged := []byte(strings.Replace(string(failing), `"status":"fail"`, `"status":"pass"`, 1))
	if bytes.Equal(forged, failing) {
		t.Fatal("the forgery changed nothing")
	}
	good := answer(challenge, passing)

	tests := []struct {
		name        string
		attest      bool
		obj         platform.ReportObject
		status      string
		want        string // in the gate's error, or the verdict's summary
		wantIgnored string
		pcrs        map[int][]byte // the gate's attestation_pcrs
	}{
		{name: "attested answer passes", attest: true, obj: platform.ReportObject{Key: key, Body: good, Attestation: doc(nitro, inst, challenge, good)}, status: platform.NodePass},
		{name: "unattested answer passes when attestation is not required", obj: platform.ReportObject{Key: key, Body: good}, status: platform.NodePass},
		// The forger has S3 access only: it rewrote the node's genuine
		// failing report to pass and kept the node's attestation.
		{name: "forged content", attest: true, obj: platform.ReportObject{Key: key, Body: forged, Attestation: doc(nitro, inst, challenge, failing)}, status: platform.NodeRejected,
			want: "the report's content is not what the node's NitroTPM attested"},
		{name: "no attestation document", attest: true, obj: platform.ReportObject{Key: key, Body: good}, status: platform.NodeRejected,
			want: "no NitroTPM attestation document (" + key + ".nitrotpm)"},
		{name: "unknown root", attest: true, obj: platform.ReportObject{Key: key, Body: good, Attestation: doc(rogue, inst, challenge, good)}, status: platform.NodeRejected,
			want: "not signed by the trusted Nitro root"},
		{name: "another instance's attestation", attest: true, obj: platform.ReportObject{Key: key, Body: good, Attestation: doc(nitro, "i-11111111111111111", challenge, good)}, status: platform.NodeRejected,
			want: "another instance"},
		{name: "an earlier challenge's attestation", attest: true, obj: platform.ReportObject{Key: key, Body: good, Attestation: doc(nitro, inst, earlier, good)}, status: platform.NodeRejected,
			want: "answers another challenge than this apply's"},
		// A report of an earlier apply, replayed (stored again, under a
		// key of now): it answers that apply's challenge.
		{name: "replayed from an earlier apply", attest: true, obj: platform.ReportObject{Key: key, Body: answer(earlier, passing), Attestation: doc(nitro, inst, earlier, answer(earlier, passing))}, status: platform.NodeMissing,
			wantIgnored: "answers challenge e0e0e0e0e0e0…, not this apply's c1c1c1c1c1c1…"},
		// The image's measurement: the test PKI's documents carry PCRs 0 to
		// 15 of 48 zero bytes; another image's is rejected, naming the PCR.
		{name: "the measured image (PCR 4)", attest: true, obj: platform.ReportObject{Key: key, Body: good, Attestation: doc(nitro, inst, challenge, good)}, status: platform.NodePass,
			pcrs: map[int][]byte{4: make([]byte, 48)}},
		{name: "another image (PCR 4)", attest: true, obj: platform.ReportObject{Key: key, Body: good, Attestation: doc(nitro, inst, challenge, good)}, status: platform.NodeRejected,
			pcrs: map[int][]byte{4: bytes.Repeat([]byte{0xab}, 48)}, want: "the node did not boot the measured image (attestation_pcrs): attestation PCR 4 does not match"},
		{name: "boot report, no challenge", obj: platform.ReportObject{Key: key, Body: answer(nil, passing)}, status: platform.NodeMissing,
			wantIgnored: "answers no challenge"},
		// A failing report of the node's launch fails it without answering
		// (a footprint's failing instance abandons itself before any
		// challenge reaches it); forging a failure gains nothing.
		{name: "failing boot report fails the node", attest: true, obj: platform.ReportObject{Key: key, Body: answer(nil, passing, nvlink)}, status: platform.NodeFail,
			want: "gpu.nvlink gpu3: expected >= 18, observed 17"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &platform.Gate{Spec: platform.ValidationSpec{}.WithDefaults(), ProfileSHA256: platform.ProfileSHA256("name = \"train-a\"\n"),
				Trusted: []*x509.Certificate{signer.Cert}, Region: "me-central-1", AccountID: acct, ZoneIDs: map[string]string{"me-central-1a": "mec1-az1"},
				Challenge: challenge, Attest: tt.attest, AttestRoots: nitro.Roots(), AttestPCRs: tt.pcrs}
			deadline := launch.Add(20 * time.Minute)
			res := g.Decide(node, []platform.ReportObject{tt.obj}, deadline, deadline)
			v := res.Nodes[0]
			if v.Status != tt.status {
				t.Fatalf("status %s, want %s: %s %v", v.Status, tt.status, v.Summary, v.Rejected)
			}
			msg := (&platform.GateError{Resource: "GPU cluster train-a", Result: res, Timeout: 20 * time.Minute}).Error()
			if tt.want != "" && !strings.Contains(msg, tt.want) {
				t.Errorf("error lacks %q:\n%s", tt.want, msg)
			}
			if tt.wantIgnored != "" {
				if len(v.Ignored) != 1 || !strings.Contains(v.Ignored[0], tt.wantIgnored) {
					t.Errorf("ignored = %q, want %q", v.Ignored, tt.wantIgnored)
				}
				if !strings.Contains(msg, "never reported an answer to this apply's challenge") || !strings.Contains(msg, tt.wantIgnored) {
					t.Errorf("timeout error does not say why the node's reports were passed over:\n%s", msg)
				}
			}
		})
	}

}

func TestParseAttestationPCRs(t *testing.T) {
	sha := strings.Repeat("0a", 48)
	got, err := platform.ParseAttestationPCRs(map[string]string{"4": sha, "12": strings.ToUpper(sha)})
	if err != nil || len(got) != 2 || len(got[4]) != 48 || got[12][0] != 0x0a {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []map[string]string{{"32": sha}, {"-1": sha}, {"04": sha}, {"x": sha}, {"4": "abc"}, {"4": strings.Repeat("0a", 32)}} {
		if _, err := platform.ParseAttestationPCRs(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	ps := platform.ValidationSpec{Attestation: "none", AttestationPCRs: map[string]string{"4": sha}}.Validate("validation", nil)
	if !slices.ContainsFunc(ps, func(p platform.Problem) bool {
		return p.Path == "validation.attestation_pcrs" && p.Summary == "PCRs without attestation"
	}) {
		t.Errorf("pcrs with attestation none: %v", ps)
	}
}

func FuzzParseAttestationPCRs(f *testing.F) {
	f.Add("4", strings.Repeat("0a", 48))
	f.Add("31", "zz")
	f.Fuzz(func(t *testing.T, k, v string) {
		got, err := platform.ParseAttestationPCRs(map[string]string{k: v})
		if err != nil {
			return
		}
		for i, b := range got {
			if i < 0 || i > 31 || len(b) != 48 {
				t.Fatalf("accepted PCR %d of %d bytes from %q=%q", i, len(b), k, v)
			}
		}
	})
}
