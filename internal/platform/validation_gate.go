package platform

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/identity"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// Node outcomes of the validation gate.
const (
	NodePass     = "pass"     // a verified report whose checks passed
	NodeFail     = "fail"     // a verified report with a failed check, or attested outside the jurisdiction
	NodeRejected = "rejected" // only reports whose identity does not verify or is another node's
	NodeMissing  = "missing"  // no report yet
)

// Gate actions.
const (
	GateWait    = "wait"    // not every node has reported and time is left
	GatePass    = "pass"    // every node passed
	GateFail    = "fail"    // a node failed and on_failure is fail (or replacements ran out)
	GateWarn    = "warn"    // a node failed and on_failure is warn
	GateReplace = "replace" // replace the failing nodes (Replace) and wait again
	GateTimeout = "timeout" // the deadline passed with nodes missing
)

// clockSkew is how much earlier than a node's launch a report may say it
// was generated (the node's clock and EC2's differ a little).
const clockSkew = 5 * time.Minute

// ExpectedNode is a node the gate waits for.
type ExpectedNode struct {
	Index      int
	InstanceID string
	Zone       string // zone name, as EC2 reports it
	ZoneID     string
	LaunchTime time.Time
}

// ReportObject is one object under the reports prefix: its key relative to
// the prefix (INSTANCE-ID/TIME.json) and its body.
type ReportObject struct {
	Key          string
	LastModified time.Time
	Body         []byte
	// Attestation is the NitroTPM attestation document stored beside the
	// report (Key + AttestationSuffix), nil when there is none.
	Attestation []byte
}

// Gate judges the reports of one resource's nodes.
type Gate struct {
	Spec ValidationSpec // with defaults
	// ProfileSHA256 is the checksum of the profile the nodes were given:
	// a report against another profile is stale and ignored.
	ProfileSHA256 string
	Trusted       []*x509.Certificate
	Region        string
	AccountID     string
	// ZoneIDs maps the region's zone names to zone ids.
	ZoneIDs map[string]string
	Policy  *residency.Policy
	// Challenge is the gate's challenge (validation_attestation.go): a
	// report must answer it. nil: none is required (the data source).
	Challenge []byte
	// Issued is when the challenge was issued: the reports answering it
	// are newer, and only those are listed.
	Issued time.Time
	// Attest requires each report to come with a NitroTPM attestation
	// document that chains to AttestRoots.
	Attest      bool
	AttestRoots *x509.CertPool
	// AttestPCRs are PCR values each attestation document must carry.
	AttestPCRs map[int][]byte
}

// ProfileSHA256 is the checksum a report carries for profile text.
func ProfileSHA256(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// NodeVerdict is what the gate found for one node.
type NodeVerdict struct {
	Index      int
	InstanceID string
	Status     string // NodePass, NodeFail, NodeRejected, NodeMissing
	// Summary is one line: the checks passed, or the first failure.
	Summary string
	// Failures are the failed (or required, not run) checks, each "check
	// subject: expected X, observed Y".
	Failures []string
	// Rejected are the reports refused, each with why.
	Rejected []string
	// Ignored are reports passed over because they do not answer the
	// gate's challenge, each with why: not this apply's evidence, but
	// what a node that never answers left (or what was replayed).
	Ignored []string
	// ReportKey is the report judged, relative to the prefix.
	ReportKey                      string
	AttestedRegion, AttestedZoneID string
	GeneratedAt                    time.Time
	Passed, Failed, NotRun         int
	// Checks are the report's checks, benchmark figures included (their
	// observed value carries the efficiency against the peak).
	Checks []ReportCheck
}

// ReportCheck is one check of a report.
type ReportCheck struct {
	ID, Subject, Status, Expected, Observed, Reason string
	Optional                                        bool
}

// Name is the check id and subject, as hwprobe shows them.
func (c ReportCheck) Name() string {
	if c.Subject == "" {
		return c.ID
	}
	return c.ID + " " + c.Subject
}

// GateResult is the gate's decision after one look at the reports.
type GateResult struct {
	Nodes    []NodeVerdict
	Reported int
	Failing  int
	Action   string
	// Replace are the indices to replace (GateReplace).
	Replace []int
	// Progress is the line logged after every look: "6/8 nodes reported,
	// 1 failing: node 3 gpu.nvlink gpu3: expected >= 18, observed 17".
	Progress string
}

// ReportSchema names the report JSON schema the gate reads (hwprobe's
// report.SchemaVersion; a test keeps the two equal).
const ReportSchema = "hwprobe.mlplatform.io/report/v1"

// NodeReport is what the gate reads of a node's report: the fields of
// hwprobe's report schema it judges by. It is the gate's own view, so that
// the plugins link none of hwprobe's node agent (probe, gpu, bench,
// validate), which hwprobe's report types bring; a test decodes reports
// that hwprobe's report package wrote into it.
type NodeReport struct {
	Schema      string    `json:"schema"`
	GeneratedAt time.Time `json:"generated_at"`
	// Challenge is the gate's challenge the report answers (hex).
	Challenge string `json:"challenge,omitempty"`
	Profile   *struct {
		SHA256 string `json:"sha256"`
	} `json:"profile,omitempty"`
	Validation *struct {
		Checks []struct {
			ID       string `json:"id"`
			Subject  string `json:"subject,omitempty"`
			Status   string `json:"status"`
			Expected string `json:"expected,omitempty"`
			Observed string `json:"observed,omitempty"`
			Reason   string `json:"reason,omitempty"`
			Optional bool   `json:"optional,omitempty"`
		} `json:"checks"`
		Summary struct {
			Pass   int `json:"pass"`
			Fail   int `json:"fail"`
			NotRun int `json:"not_run"`
		} `json:"summary"`
		Exit int `json:"exit_code"`
	} `json:"validation,omitempty"`
	Identity *struct {
		Document  string `json:"document"`
		Signature string `json:"rsa2048"`
	} `json:"identity,omitempty"`
}

// ParseReport decodes a report object's JSON.
func ParseReport(body []byte) (NodeReport, error) {
	var r NodeReport
	if err := json.Unmarshal(body, &r); err != nil {
		return NodeReport{}, fmt.Errorf("report: %w", err)
	}
	if r.Schema != ReportSchema {
		return NodeReport{}, fmt.Errorf("report: schema %q, want %s", r.Schema, ReportSchema)
	}
	return r, nil
}

// parseTrusted reads PEM certificates.
func parseTrusted(pemText string) ([]*x509.Certificate, error) {
	return identity.ParseCertificates([]byte(pemText))
}

// Decide judges the reports against the expected nodes at now. Reports of
// other instances, older than the node's launch, or against another
// profile are ignored; a report whose identity document does not verify
// against the trusted certificates, or names another instance, account,
// region or zone than the node's, is rejected and says why.
func (g *Gate) Decide(expected []ExpectedNode, reports []ReportObject, now, deadline time.Time) GateResult {
	byInstance := map[string][]ReportObject{}
	for _, r := range reports {
		id, _, _ := strings.Cut(r.Key, "/")
		byInstance[id] = append(byInstance[id], r)
	}
	res := GateResult{}
	var failing []string
	for _, n := range expected {
		v := g.judge(n, byInstance[n.InstanceID])
		if v.Status != NodeMissing {
			res.Reported++
		}
		if v.Status == NodeFail || v.Status == NodeRejected {
			res.Failing++
			failing = append(failing, fmt.Sprintf("node %d %s", n.Index, v.Summary))
			res.Replace = append(res.Replace, n.Index)
		}
		res.Nodes = append(res.Nodes, v)
	}
	res.Progress = fmt.Sprintf("%d/%d nodes reported", res.Reported, len(expected))
	if res.Failing > 0 {
		res.Progress += fmt.Sprintf(", %d failing: %s", res.Failing, strings.Join(failing, "; "))
	}
	switch {
	case res.Reported == len(expected) && res.Failing == 0:
		res.Action = GatePass
	case res.Reported == len(expected):
		switch g.Spec.OnFailure {
		case OnFailureWarn:
			res.Action = GateWarn
		case OnFailureReplace:
			res.Action = GateReplace
		default:
			res.Action = GateFail
		}
	case !now.Before(deadline):
		res.Action = GateTimeout
	default:
		res.Action = GateWait
	}
	if res.Action != GateReplace {
		res.Replace = nil
	}
	return res
}

// ReportKeyTime is how a report's key names the time it was generated:
// INSTANCE-ID/20060102T150405Z.json.
const ReportKeyTime = "20060102T150405Z"

// judge picks the node's newest accepted report. Newest is what the store
// recorded (LastModified), never the key, which the writer chooses; a key
// must name the report's generated_at, which must agree with the store's
// time; the report must have been written after the node's launch, by the
// signed pendingTime of its identity document.
func (g *Gate) judge(n ExpectedNode, objs []ReportObject) NodeVerdict {
	v := NodeVerdict{Index: n.Index, InstanceID: n.InstanceID, Status: NodeMissing, Summary: "no report yet"}
	slices.SortFunc(objs, func(a, b ReportObject) int { // newest first
		if c := b.LastModified.Compare(a.LastModified); c != 0 {
			return c
		}
		return strings.Compare(b.Key, a.Key)
	})
	reject := func(o ReportObject, format string, args ...any) {
		v.Rejected = append(v.Rejected, o.Key+": "+fmt.Sprintf(format, args...))
	}
	for _, o := range objs {
		r, err := ParseReport(o.Body)
		if err != nil {
			reject(o, "%v", err)
			continue
		}
		if want := n.InstanceID + "/" + r.GeneratedAt.UTC().Format(ReportKeyTime) + ".json"; o.Key != want {
			reject(o, "the key does not name the report's generated_at %s (want %s): a report is stored under the time it was generated", r.GeneratedAt.UTC().Format(time.RFC3339), want)
			continue
		}
		if !o.LastModified.IsZero() && (o.LastModified.Sub(r.GeneratedAt) > clockSkew || r.GeneratedAt.Sub(o.LastModified) > clockSkew) {
			reject(o, "stored at %s but says it was generated at %s", o.LastModified.UTC().Format(time.RFC3339), r.GeneratedAt.UTC().Format(time.RFC3339))
			continue
		}
		if g.ProfileSHA256 != "" && (r.Profile == nil || r.Profile.SHA256 != g.ProfileSHA256) {
			continue // validated against another profile
		}
		challengeErr := g.checkChallenge(r)
		att, err := g.attest(n, r)
		if err != nil {
			if challengeErr != nil {
				v.Ignored = append(v.Ignored, o.Key+": "+challengeErr.Error())
			} else {
				reject(o, "%v", err)
			}
			continue
		}
		if challengeErr == nil {
			if err := g.checkAttestation(n, o); err != nil {
				reject(o, "%v", err)
				continue
			}
		}
		if r.GeneratedAt.Before(att.pending.Add(-clockSkew)) || (!o.LastModified.IsZero() && o.LastModified.Before(att.pending.Add(-clockSkew))) {
			reject(o, "written before the node launched (its signed pendingTime is %s)", att.pending.UTC().Format(time.RFC3339))
			continue
		}
		cand := v
		cand.ReportKey, cand.GeneratedAt, cand.AttestedRegion, cand.AttestedZoneID = o.Key, r.GeneratedAt, att.region, att.zoneID
		g.outcome(&cand, r)
		if challengeErr != nil && cand.Status != NodeFail {
			// Only an answer to this gate's challenge passes a node. A
			// failing report of the node's launch fails it without one
			// (its boot report: a footprint's failing instance abandons
			// itself and never answers); forging a failure gains nothing
			// that a rejected forgery does not.
			v.Ignored = append(v.Ignored, o.Key+": "+challengeErr.Error())
			continue
		}
		return cand
	}
	if len(v.Rejected) > 0 {
		v.Status = NodeRejected
		v.Summary = "report rejected: " + v.Rejected[0]
	}
	return v
}

// attested is what a verified identity document says of the node.
type attested struct {
	region, zoneID string
	pending        time.Time // the signed pendingTime: when this launch began
}

// attest verifies the report's identity document and that it is the
// node's: instance, account, region, zone.
func (g *Gate) attest(n ExpectedNode, r NodeReport) (attested, error) {
	id := r.Identity
	if id == nil || id.Document == "" {
		return attested{}, errors.New("no signed identity document")
	}
	if len(g.Trusted) == 0 {
		return attested{}, errors.New("identity not verified: no trusted certificates are configured")
	}
	if _, err := identity.Verify([]byte(id.Document), []byte(id.Signature), g.Trusted); err != nil {
		return attested{}, fmt.Errorf("identity document does not verify: %w", err)
	}
	doc, err := identity.ParseDocument([]byte(id.Document))
	if err != nil {
		return attested{}, err
	}
	zoneID := g.ZoneIDs[doc.AvailabilityZone]
	pending, perr := time.Parse(time.RFC3339, doc.PendingTime)
	switch {
	case doc.InstanceID != n.InstanceID:
		return attested{}, fmt.Errorf("identity of instance %s, not of node %d (%s)", doc.InstanceID, n.Index, n.InstanceID)
	case g.AccountID != "" && doc.AccountID != g.AccountID:
		return attested{}, fmt.Errorf("identity of account %s, not %s", doc.AccountID, g.AccountID)
	case doc.Region != g.Region:
		return attested{}, fmt.Errorf("identity in region %s, the node runs in %s", doc.Region, g.Region)
	case n.Zone != "" && doc.AvailabilityZone != n.Zone:
		return attested{}, fmt.Errorf("identity in zone %s, the node runs in %s", doc.AvailabilityZone, n.Zone)
	case n.ZoneID != "" && zoneID != "" && zoneID != n.ZoneID:
		return attested{}, fmt.Errorf("identity in zone %s, the node runs in %s", zoneID, n.ZoneID)
	case perr != nil:
		return attested{}, fmt.Errorf("identity document without a valid pendingTime (%q): the report's age cannot be proven", doc.PendingTime)
	case !n.LaunchTime.IsZero() && pending.Before(n.LaunchTime.Add(-clockSkew)):
		return attested{}, fmt.Errorf("identity of an earlier launch of the instance (pendingTime %s; the node launched at %s)", pending.UTC().Format(time.RFC3339), n.LaunchTime.UTC().Format(time.RFC3339))
	}
	if zoneID == "" {
		zoneID = n.ZoneID
	}
	return attested{region: doc.Region, zoneID: zoneID, pending: pending}, nil
}

// outcome reads the report's checks and the attested location into v.
func (g *Gate) outcome(v *NodeVerdict, r NodeReport) {
	if g.Policy != nil && (!g.Policy.RegionAllowed(v.AttestedRegion) || !g.Policy.ZoneIDAllowed(v.AttestedZoneID)) {
		v.Status = NodeFail
		f := fmt.Sprintf("residency: attested in %s (%s), outside the jurisdiction", v.AttestedRegion, v.AttestedZoneID)
		v.Failures = append(v.Failures, f)
		v.Summary = f
		return
	}
	res := r.Validation
	if res == nil {
		v.Status, v.Summary = NodeFail, "the report carries no validation result"
		v.Failures = append(v.Failures, v.Summary)
		return
	}
	v.Passed, v.Failed, v.NotRun = res.Summary.Pass, res.Summary.Fail, res.Summary.NotRun
	for _, c := range res.Checks {
		rc := ReportCheck{ID: c.ID, Subject: c.Subject, Status: c.Status, Expected: c.Expected, Observed: c.Observed, Reason: c.Reason, Optional: c.Optional}
		v.Checks = append(v.Checks, rc)
		switch {
		case c.Status == "fail":
			v.Failures = append(v.Failures, describeCheck(rc.Name(), c.Expected, c.Observed, c.Reason))
		case c.Status == "not-run" && !c.Optional:
			v.Failures = append(v.Failures, describeCheck(rc.Name(), c.Expected, "not run", c.Reason))
		}
	}
	if res.Exit != 0 && len(v.Failures) == 0 {
		v.Failures = append(v.Failures, fmt.Sprintf("hwprobe validate exit code %d", res.Exit))
	}
	if len(v.Failures) > 0 {
		v.Status, v.Summary = NodeFail, v.Failures[0]
		return
	}
	v.Status = NodePass
	v.Summary = fmt.Sprintf("%d checks passed", res.Summary.Pass)
}

func describeCheck(name, expected, observed, reason string) string {
	s := name
	if expected != "" || observed != "" {
		s += fmt.Sprintf(": expected %s, observed %s", orDash(expected), orDash(observed))
	}
	if reason != "" {
		s += " (" + reason + ")"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// GateError is a gate that did not pass: failed nodes, or nodes that never
// reported.
type GateError struct {
	Resource string
	Result   GateResult
	// Timeout is the wait that ran out (GateTimeout).
	Timeout time.Duration
	// Console is what the missing nodes' console output ends with, by
	// instance id, where it could be read: logged as progress, never in
	// the error's text (CI logs keep errors).
	Console map[string]string
	// ReplacementsUsed when replacements ran out.
	ReplacementsUsed int
}

func (e *GateError) Error() string {
	var b strings.Builder
	switch e.Result.Action {
	case GateTimeout:
		fmt.Fprintf(&b, "validation of %s timed out after %s: %s", e.Resource, e.Timeout, e.Result.Progress)
		for _, n := range e.Result.Nodes {
			if n.Status != NodeMissing {
				continue
			}
			fmt.Fprintf(&b, "\n  node %d (%s) never reported", n.Index, n.InstanceID)
			if len(n.Ignored) > 0 {
				fmt.Fprintf(&b, " an answer to this apply's challenge (its newest report passed over: %s)", n.Ignored[0])
			}
			// The console output stays out of the error, which CI logs
			// keep: it is in the provider's log, and one command away.
			if c := strings.TrimSpace(e.Console[n.InstanceID]); c != "" {
				fmt.Fprintf(&b, "; the end of its console output is in the provider's log (INFO), the whole of it from: aws ec2 get-console-output --instance-id %s --latest", n.InstanceID)
			} else {
				fmt.Fprintf(&b, "; its console output could not be read (aws ec2 get-console-output --instance-id %s --latest)", n.InstanceID)
			}
		}
	default:
		fmt.Fprintf(&b, "validation of %s failed: %d of %d nodes failed", e.Resource, e.Result.Failing, len(e.Result.Nodes))
		if e.ReplacementsUsed > 0 {
			fmt.Fprintf(&b, " after %d replacements (max_replacements)", e.ReplacementsUsed)
		}
	}
	for _, n := range e.Result.Nodes {
		if n.Status != NodeFail && n.Status != NodeRejected {
			continue
		}
		fmt.Fprintf(&b, "\n  node %d (%s):", n.Index, n.InstanceID)
		for _, f := range n.Failures {
			b.WriteString("\n    " + f)
		}
		for _, r := range n.Rejected {
			b.WriteString("\n    rejected " + r)
		}
	}
	return b.String()
}

// Warning is the text of a GateWarn result.
func (r GateResult) Warning(resource string) string {
	s := (&GateError{Resource: resource, Result: r}).Error()
	return s + "\n(on_failure = \"warn\": the nodes are kept)"
}

// gateRun is one resource's wait for its nodes' reports: the loop both the
// GPU cluster and the CPU footprint gate with, each giving its own nodes
// and its own way to replace one.
type gateRun struct {
	Resource string         // "GPU cluster NAME", for messages
	Spec     ValidationSpec // with defaults
	Profile  string         // the profile text the nodes were given
	Prefix   string         // the reports prefix, s3://bucket/prefix/NAME/
	// Attested requires NitroTPM-attested reports (planAttestation).
	Attested bool
	Progress func(format string, args ...any)
	// Nodes lists the nodes to judge at this look; launching counts the
	// nodes expected that are not listed yet (the gate cannot pass while
	// any are).
	Nodes func(ctx context.Context) (nodes []ExpectedNode, launching int, err error)
	// Replace has the nodes at res.Replace terminated and relaunched.
	Replace func(ctx context.Context, res GateResult, used int) error
	// Judged, when set, sees every look's verdicts before the gate acts
	// on them (a footprint puts the instances that passed in service).
	Judged func(ctx context.Context, res GateResult) error
}

// runGate looks at the reports at once and then every Polling.Gate
// interval, and acts on the decision: pass, warn (the result's Action is
// GateWarn), fail or timeout (a *GateError), or replace the failing nodes
// and look again, the deadline starting over, up to max_replacements.
func (e *Env) runGate(ctx context.Context, r gateRun) (GateResult, error) {
	gate, err := e.newGate(ctx, r.Spec, r.Profile)
	if err != nil {
		return GateResult{}, err
	}
	if gate.Challenge, err = newChallenge(); err != nil {
		return GateResult{}, err
	}
	gate.Issued = time.Now()
	if gate.Attest = r.Attested; gate.Attest {
		if gate.AttestRoots, err = attestationRoots(r.Spec.AttestationRoots); err != nil {
			return GateResult{}, err
		}
		if gate.AttestPCRs, err = ParseAttestationPCRs(r.Spec.AttestationPCRs); err != nil {
			return GateResult{}, fmt.Errorf("attestation_pcrs: %w", err)
		}
		if r.Progress != nil {
			r.Progress("%s: validation: reports must be attested by each node's NitroTPM", r.Resource)
		}
	}
	issued := map[string]bool{}
	cache := map[string][]byte{}
	return e.gateLoop(ctx, r, gate, func(ctx context.Context, nodes []ExpectedNode) ([]ReportObject, error) {
		if err := issueChallenge(ctx, e.Clients.EC2, gate.Challenge, nodes, issued); err != nil {
			return nil, err
		}
		return e.readReports(ctx, r.Prefix, gate, nodes, cache)
	})
}

// gateLoop is runGate's loop, the reports read by reports.
func (e *Env) gateLoop(ctx context.Context, r gateRun, gate *Gate, reports func(context.Context, []ExpectedNode) ([]ReportObject, error)) (GateResult, error) {
	v := r.Spec
	progress := r.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	replaced := 0
	deadline := time.Now().Add(v.Timeout)
	var res GateResult
	for w := e.polling().Gate.Start(); ; {
		expected, launching, err := r.Nodes(ctx)
		if err != nil {
			return res, err
		}
		objs, err := reports(ctx, expected)
		if err != nil {
			return res, err
		}
		res = gate.Decide(expected, objs, time.Now(), deadline)
		if launching > 0 {
			res.Progress += fmt.Sprintf(", %d launching", launching)
			if res.Action == GatePass {
				res.Action = GateWait
				if !time.Now().Before(deadline) {
					res.Action = GateTimeout
				}
			}
		}
		progress("%s: validation: %s", r.Resource, res.Progress)
		if r.Judged != nil {
			if err := r.Judged(ctx, res); err != nil {
				return res, err
			}
		}
		switch res.Action {
		case GatePass, GateWarn:
			return res, nil
		case GateFail:
			return res, &GateError{Resource: r.Resource, Result: res}
		case GateTimeout:
			console := e.consoleTails(ctx, res)
			for _, n := range res.Nodes {
				if c := strings.TrimSpace(console[n.InstanceID]); c != "" {
					progress("%s: validation: node %d (%s) never reported; its console output ends with:\n%s", r.Resource, n.Index, n.InstanceID, c)
				}
			}
			return res, &GateError{Resource: r.Resource, Result: res, Timeout: v.Timeout, Console: console}
		case GateReplace:
			if replaced+len(res.Replace) > *v.MaxReplacements {
				res.Action = GateFail
				return res, &GateError{Resource: r.Resource, Result: res, ReplacementsUsed: replaced}
			}
			if err := r.Replace(ctx, res, replaced+len(res.Replace)); err != nil {
				return res, err
			}
			replaced += len(res.Replace)
			deadline = time.Now().Add(v.Timeout)
			continue
		}
		if err := w.Next(ctx); err != nil {
			return res, fmt.Errorf("waiting for validation reports (%s): %w", res.Progress, err)
		}
	}
}
