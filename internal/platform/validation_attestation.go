package platform

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mlplatform/mlplatform/hwprobe/attest"
	"github.com/mlplatform/mlplatform/hwprobe/identity"
	"github.com/mlplatform/mlplatform/internal/cloud"
)

// Evidence the hardware signs. Each gate issues a challenge of its own
// (32 random bytes) to the nodes it judges, as an instance tag the node
// reads from its metadata service (so the nodes' user data, and with it
// the launch template, never changes from one apply to the next); hwprobe's
// challenge daemon on the node answers it with a report that carries it.
// Where the nodes can attest (NitroTPM), each answer comes with a NitroTPM
// attestation document signed by the AWS Nitro PKI whose nonce is the
// challenge and whose user data is the SHA-256 of the report's bytes as
// stored: a report that anyone but the node's hardware wrote, or changed,
// does not verify. Without attestation the challenge still stops replays,
// but not a writer of the prefix who copies it into a forged report: the
// plan says so.

// Attestation modes of the validation block.
const (
	// AttestationAuto requires NitroTPM attestation when the image
	// supports NitroTPM (TpmSupport v2.0), and warns at plan when not.
	AttestationAuto = "auto"
	// AttestationNitroTPM requires it; an image without NitroTPM fails
	// the plan.
	AttestationNitroTPM = "nitrotpm"
	// AttestationNone does not require it (a warning at plan).
	AttestationNone = "none"
)

// AttestationModes lists the attestation values, default first.
func AttestationModes() []string {
	return []string{AttestationAuto, AttestationNitroTPM, AttestationNone}
}

// ChallengeTag is the instance tag that carries the gate's challenge to a
// node (hwprobe's report.ChallengeTag; a test keeps the two equal). The
// node reads it from its metadata service (instance tags in metadata are
// on in the launch template).
const ChallengeTag = "mlplatform-hwprobe-challenge"

// AttestationSuffix names the attestation document beside a report:
// INSTANCE/TIME.json.nitrotpm (the raw COSE_Sign1 bytes).
const AttestationSuffix = cloud.ReportAttestationSuffix

// MaxAttestationBytes bounds an attestation document read (AWS's are about
// 5 KiB).
const MaxAttestationBytes = 64 << 10

// NitroTPMSupported is how EC2 describes an image whose instances get a
// NitroTPM (DescribeImages TpmSupport).
const NitroTPMSupported = "v2.0"

func (v ValidationSpec) validateAttestation(prefix string, k func(string) bool) []Problem {
	var ps []Problem
	if v.Attestation != "" && k("attestation") && !slices.Contains(AttestationModes(), v.Attestation) {
		ps = append(ps, Problem{Path: prefix + ".attestation", Summary: "Unknown attestation mode",
			Detail: fmt.Sprintf("%q: use %s.", v.Attestation, strings.Join(AttestationModes(), ", "))})
	}
	if k("attestation_pcrs") {
		if _, err := ParseAttestationPCRs(v.AttestationPCRs); err != nil {
			ps = append(ps, Problem{Path: prefix + ".attestation_pcrs", Summary: "Invalid attestation PCRs", Detail: err.Error()})
		}
		if len(v.AttestationPCRs) > 0 && v.Attestation == AttestationNone && k("attestation") {
			ps = append(ps, Problem{Path: prefix + ".attestation_pcrs", Summary: "PCRs without attestation",
				Detail: "attestation_pcrs are checked in NitroTPM attestation documents, and attestation = \"none\" requires none: set attestation to \"nitrotpm\" (or \"auto\"), or remove attestation_pcrs."})
		}
	}
	if v.AttestationRoots != "" && k("attestation_roots") {
		if _, err := identity.ParseCertificates([]byte(v.AttestationRoots)); err != nil {
			ps = append(ps, Problem{Path: prefix + ".attestation_roots", Summary: "Invalid attestation roots",
				Detail: fmt.Sprintf("%v: give one or more PEM CERTIFICATE blocks (the AWS Nitro root certificate is the default).", err)})
		}
	}
	return ps
}

// planAttestation decides whether the gate requires attested reports, from
// the mode and the image's NitroTPM support (imageTPM is its TpmSupport;
// imageID "" while the image is not known, when nothing is decided yet),
// and says at plan what the evidence will be.
func planAttestation(v *ValidationSpec, imageID, imageTPM string, known func(string) bool) (attested bool, ps []Problem) {
	if v == nil || !v.Wait || !known("validation.attestation") {
		return false, nil
	}
	mode := v.Attestation
	if mode == "" {
		mode = AttestationAuto
	}
	const path = "validation.attestation"
	forgeable := "the gate checks each node's signed identity document and that its report answers this apply's challenge, but not who wrote the report's content: a principal that may write the reports prefix could forge a node's checks."
	switch mode {
	case AttestationNone:
		return false, []Problem{{Path: path, Warning: true, Summary: "Validation evidence is not hardware-attested",
			Detail: "attestation = \"none\": " + forgeable}}
	case AttestationNitroTPM:
		if imageID != "" && imageTPM != NitroTPMSupported {
			return true, []Problem{{Path: path, Summary: "Image without NitroTPM",
				Detail: fmt.Sprintf("attestation = \"nitrotpm\" needs an image with NitroTPM: %s does not declare it (TpmSupport %q). Use an image registered with TPM support v2.0 and UEFI boot (aws ec2 register-image --tpm-support v2.0 --boot-mode uefi), such as Amazon Linux 2023's, or set attestation = \"auto\".", imageID, imageTPM)}}
		}
		return true, nil
	case AttestationAuto:
		if imageID == "" {
			return false, nil // decided at apply
		}
		if imageTPM == NitroTPMSupported {
			return true, nil
		}
		return false, []Problem{{Path: path, Warning: true, Summary: "Validation evidence is not hardware-attested",
			Detail: fmt.Sprintf("Image %s has no NitroTPM (TpmSupport v2.0), so the nodes cannot attest their reports: %s Use an image with NitroTPM to have every report signed by the Nitro hardware, or set attestation = \"none\" to say this is intended.", imageID, forgeable)}}
	}
	return false, nil
}

// ParseAttestationPCRs reads attestation_pcrs: PCR index ("0" to "31") to
// its expected SHA-384 value, 96 hex digits. nil for none.
func ParseAttestationPCRs(m map[string]string) (map[int][]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[int][]byte, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i > 31 || strconv.Itoa(i) != k {
			return nil, fmt.Errorf("PCR %q: a PCR index is a number from 0 to 31", k)
		}
		b, err := hex.DecodeString(strings.TrimSpace(m[k]))
		if err != nil || len(b) != sha512.Size384 {
			return nil, fmt.Errorf("PCR %d: %q is not a SHA-384 value: give 96 hex digits, as nitro-tpm-pcr-compute prints them", i, m[k])
		}
		out[i] = b
	}
	return out, nil
}

// newChallenge is a gate's challenge: 32 random bytes.
func newChallenge() ([]byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("validation challenge: %w", err)
	}
	return b, nil
}

// attestationRoots are the roots attestation documents must chain to:
// pemText's certificates, else AWS's Nitro root.
func attestationRoots(pemText string) (*x509.CertPool, error) {
	if pemText == "" {
		return attest.AWSRoots()
	}
	certs, err := identity.ParseCertificates([]byte(pemText))
	if err != nil {
		return nil, fmt.Errorf("attestation_roots: %w", err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// issueChallenge tags the nodes not tagged yet with the gate's challenge
// (cloud.TagGPUCluster: a thousand instances a call) and marks them in
// issued. After a failure none is marked: all are tagged again at the
// next look, with the same value.
func issueChallenge(ctx context.Context, api cloud.TagGPUClusterAPI, challenge []byte, nodes []ExpectedNode, issued map[string]bool) error {
	var ids []string
	for _, n := range nodes {
		if !issued[n.InstanceID] && n.InstanceID != "" {
			ids = append(ids, n.InstanceID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := cloud.TagGPUCluster(ctx, api, ids, map[string]string{ChallengeTag: hex.EncodeToString(challenge)}, nil); err != nil {
		return fmt.Errorf("issuing the validation challenge: %w", err)
	}
	for _, id := range ids {
		issued[id] = true
	}
	return nil
}

// checkChallenge says why a report does not answer the gate's challenge,
// or nil when it does (or the gate issued none).
func (g *Gate) checkChallenge(r NodeReport) error {
	if g.Challenge == nil {
		return nil
	}
	want := hex.EncodeToString(g.Challenge)
	switch {
	case r.Challenge == "":
		return errors.New("answers no challenge (a report from before this apply)")
	case r.Challenge != want:
		return fmt.Errorf("answers challenge %s, not this apply's %s (a report of an earlier apply, or replayed)", shortHex(r.Challenge), shortHex(want))
	}
	return nil
}

// checkAttestation verifies the report's NitroTPM attestation document when
// the gate requires one: chain to the roots, signature, the node's
// instance, the gate's challenge as nonce, and the SHA-256 of the report's
// bytes as its user data.
func (g *Gate) checkAttestation(n ExpectedNode, o ReportObject) error {
	if !g.Attest {
		return nil
	}
	if o.Attestation == nil {
		return fmt.Errorf("no NitroTPM attestation document (%s%s): the gate requires hardware-attested reports", o.Key, AttestationSuffix)
	}
	sum := sha256.Sum256(o.Body)
	_, err := attest.Verify(o.Attestation, attest.VerifyOptions{Roots: g.AttestRoots, NitroTPM: true,
		InstanceID: n.InstanceID, Nonce: g.Challenge, UserData: sum[:], PCRs: g.AttestPCRs})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, attest.ErrPCR):
		return fmt.Errorf("the node did not boot the measured image (attestation_pcrs): %w", err)
	case errors.Is(err, attest.ErrUserData):
		return fmt.Errorf("the report's content is not what the node's NitroTPM attested (SHA-256 %s differs from the attested digest): it was changed after the node wrote it: %w", shortHex(hex.EncodeToString(sum[:])), err)
	case errors.Is(err, attest.ErrNonce):
		return fmt.Errorf("the attestation answers another challenge than this apply's: %w", err)
	case errors.Is(err, attest.ErrChain):
		return fmt.Errorf("the attestation is not signed by the trusted Nitro root (attestation_roots): %w", err)
	}
	return fmt.Errorf("the attestation does not verify: %w", err)
}

func shortHex(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}
