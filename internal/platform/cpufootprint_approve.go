package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// No node approves itself. A validated footprint's group holds every
// instance it launches in Pending:Wait (the lifecycle hook); the decision
// to put it in service is the gate's, never the node's: the node only
// publishes its report and answers the gate's challenge, and the node
// policy denies it autoscaling:CompleteLifecycleAction.
//
// Two places run that decision, both through the gate's own loop (runGate:
// the challenge, the identity document, the attestation, the profile):
//   - apply: the gate completes the action of every waiting instance it
//     judged, CONTINUE as soon as the instance passed, ABANDON (CONTINUE
//     under on_failure = "warn") when it failed;
//   - after apply (scale-outs, schedules, replacements): the approver,
//     `mlplatform approve`, run in the region with the footprint's
//     approver configuration (ApproverConfig, the resource's
//     validation_approver attribute) by the team, never on a node.
//
// An instance nobody approves is abandoned when its hook's heartbeat (the
// validation timeout) runs out: the default fails closed.

// launchApprover completes the launch actions of a footprint's waiting
// instances from the gate's verdicts.
type launchApprover struct {
	e        *Env
	group    string
	resource string
	// onFail is the result for a failing instance: ABANDON, or CONTINUE
	// under on_failure = "warn".
	onFail   string
	progress func(format string, args ...any)
	waiting  map[string]bool   // instance id -> Pending:Wait at the last look
	done     map[string]string // instance id -> result completed
}

func newLaunchApprover(e *Env, group, resource string, v ValidationSpec, progress func(string, ...any)) *launchApprover {
	if progress == nil {
		progress = func(string, ...any) {}
	}
	return &launchApprover{e: e, group: group, resource: resource, onFail: lifecycleOnFail(v), progress: progress,
		waiting: map[string]bool{}, done: map[string]string{}}
}

// observe records which of the group's instances wait for their action.
func (a *launchApprover) observe(in []cloud.FootprintInstance) {
	clear(a.waiting)
	for _, i := range in {
		if i.LifecycleState == cloud.LifecycleWaiting {
			a.waiting[i.ID] = true
		}
	}
}

// complete completes id's action once with result. An action that is no
// longer waiting (completed by a call whose answer was lost, or its
// heartbeat ran out) is done: the group has decided.
func (a *launchApprover) complete(ctx context.Context, id, result string) error {
	if _, ok := a.done[id]; ok || !a.waiting[id] {
		return nil
	}
	err := cloud.CompleteLaunch(ctx, a.e.Clients.AutoScaling, a.group, id, result)
	if err != nil && !errors.Is(err, cloud.ErrNoLifecycleAction) {
		return err
	}
	a.done[id] = result
	delete(a.waiting, id)
	if err != nil {
		a.progress("%s: validation: instance %s no longer waits for its launch action (completed before, or its heartbeat ran out)", a.resource, id)
		return nil
	}
	a.progress("%s: validation: instance %s launch %s", a.resource, id, result)
	return nil
}

// judged puts every waiting instance that passed in service at once, so
// that none waits for the slowest node (or runs out its heartbeat).
func (a *launchApprover) judged(ctx context.Context, res GateResult) error {
	for _, v := range res.Nodes {
		if v.Status == NodePass {
			if err := a.complete(ctx, v.InstanceID, cloud.LifecycleContinue); err != nil {
				return err
			}
		}
	}
	return nil
}

// finish completes the failing instances' actions after the gate decided:
// onFail for a failed or rejected report. An instance that never reported
// keeps waiting: its heartbeat abandons it, or a later gate judges it.
func (a *launchApprover) finish(ctx context.Context, res GateResult) error {
	if err := a.judged(ctx, res); err != nil {
		return err
	}
	for _, v := range res.Nodes {
		if v.Status == NodeFail || v.Status == NodeRejected {
			if err := a.complete(ctx, v.InstanceID, a.onFail); err != nil {
				return err
			}
		}
	}
	return nil
}

// replace has a failing instance replaced: ABANDON when it waits (the
// group launches another), else terminated through Auto Scaling.
func (a *launchApprover) replace(ctx context.Context, id string) error {
	if a.waiting[id] {
		return a.complete(ctx, id, cloud.LifecycleAbandon)
	}
	return cloud.ReplaceGroupInstance(ctx, a.e.Clients.AutoScaling, id)
}

// afterGate completes what the gate decided with a fresh context bounded
// by RecordTimeout when ctx is done (the gate's own error is kept).
func (a *launchApprover) afterGate(ctx context.Context, res GateResult, gateErr error) error {
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = recordContext(ctx, RecordTimeout)
		defer cancel()
	}
	var ge *GateError
	if gateErr != nil && !errors.As(gateErr, &ge) {
		// Not a decision: put in service only what passed.
		if err := a.judged(ctx, res); err != nil {
			return fmt.Errorf("%w; completing the launch actions failed too (%v)", gateErr, err)
		}
		return gateErr
	}
	if err := a.finish(ctx, res); err != nil {
		if gateErr != nil {
			return fmt.Errorf("%w; completing the launch actions failed too (%v)", gateErr, err)
		}
		return err
	}
	return gateErr
}

// ApproverSchema names the approver configuration's format.
const ApproverSchema = "mlplatform.io/approver/v1"

// ApproverConfig is what the approver needs to decide the launches of one
// footprint after apply, as the apply's gate would: the profile the nodes
// were given and the validation settings. The footprint renders it
// (ApproverConfigFor); the team runs the approver with it in the region.
type ApproverConfig struct {
	Schema string `json:"schema"`
	Region string `json:"region"`
	// Jurisdiction, AllowedRegions and ExcludedZoneIDs are the residency
	// policy the gate holds attested nodes and the approver's endpoints to.
	Jurisdiction    string   `json:"jurisdiction"`
	AllowedRegions  []string `json:"allowed_regions,omitempty"`
	ExcludedZoneIDs []string `json:"excluded_zone_ids,omitempty"`
	Footprint       string   `json:"footprint"`
	// Profile is the profile text every instance is validated against.
	Profile string `json:"profile"`
	// Attested requires NitroTPM-attested reports.
	Attested            bool              `json:"attested"`
	ReportsS3URI        string            `json:"reports_s3_uri"`
	ReportsKMSKeyARN    string            `json:"reports_kms_key_arn,omitempty"`
	TrustedCertificates string            `json:"trusted_certificates,omitempty"`
	Attestation         string            `json:"attestation,omitempty"`
	AttestationRoots    string            `json:"attestation_roots,omitempty"`
	AttestationPCRs     map[string]string `json:"attestation_pcrs,omitempty"`
	OnFailure           string            `json:"on_failure"`
	TimeoutSeconds      int               `json:"timeout_seconds"`
}

// ApproverConfigFor renders the approver configuration of footprint name
// whose plan rendered a profile; "" when it has none (not validated, or
// inputs unknown).
func (e *Env) ApproverConfigFor(name string, v ValidationSpec, plan *CPUFootprintPlan) string {
	return e.approverConfigIn(e.Region(), name, v, plan)
}

func (e *Env) approverConfigIn(region, name string, v ValidationSpec, plan *CPUFootprintPlan) string {
	if plan == nil || plan.Profile == "" {
		return ""
	}
	v = v.WithDefaults()
	if v.TrustedCertificates == "" {
		v.TrustedCertificates = e.TrustedCertificates
	}
	c := ApproverConfig{Schema: ApproverSchema, Region: region, Footprint: name, Profile: plan.Profile, Attested: plan.Attested,
		ReportsS3URI: v.ReportsS3URI, ReportsKMSKeyARN: v.ReportsKMSKeyARN, TrustedCertificates: v.TrustedCertificates,
		Attestation: v.Attestation, AttestationRoots: v.AttestationRoots, AttestationPCRs: v.AttestationPCRs,
		OnFailure: v.OnFailure, TimeoutSeconds: int(v.Timeout / time.Second)}
	if e.Policy != nil {
		c.Jurisdiction = e.Policy.Jurisdiction.Code
		c.AllowedRegions = e.Policy.AllowedRegions
		c.ExcludedZoneIDs = e.Policy.ExcludedZoneIDs
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	return string(b)
}

// MaxApproverConfigBytes bounds an approver configuration.
const MaxApproverConfigBytes = 1 << 20

// ParseApproverConfig reads and checks an approver configuration.
func ParseApproverConfig(b []byte) (ApproverConfig, error) {
	var c ApproverConfig
	if len(b) > MaxApproverConfigBytes {
		return c, fmt.Errorf("approver configuration: %d bytes, more than %d", len(b), MaxApproverConfigBytes)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("approver configuration: %w", err)
	}
	if dec.More() {
		return c, errors.New("approver configuration: more than one JSON value")
	}
	var ps []string
	if c.Schema != ApproverSchema {
		ps = append(ps, fmt.Sprintf("schema %q, want %q", c.Schema, ApproverSchema))
	}
	if c.Region == "" {
		ps = append(ps, "region is empty")
	}
	if c.Jurisdiction == "" {
		ps = append(ps, "jurisdiction is empty")
	}
	if c.Footprint == "" {
		ps = append(ps, "footprint is empty")
	}
	if strings.TrimSpace(c.Profile) == "" {
		ps = append(ps, "profile is empty")
	}
	if !strings.HasPrefix(c.ReportsS3URI, "s3://") {
		ps = append(ps, fmt.Sprintf("reports_s3_uri %q is not an s3:// URI", c.ReportsS3URI))
	}
	if !slices.Contains(OnFailureActions(), c.OnFailure) {
		ps = append(ps, fmt.Sprintf("on_failure %q: one of %s", c.OnFailure, strings.Join(OnFailureActions(), ", ")))
	}
	if c.TimeoutSeconds < cloud.MinHookHeartbeat || c.TimeoutSeconds > cloud.MaxHookHeartbeat {
		ps = append(ps, fmt.Sprintf("timeout_seconds %d: from %d to %d", c.TimeoutSeconds, cloud.MinHookHeartbeat, cloud.MaxHookHeartbeat))
	}
	if c.Attestation != "" && !slices.Contains(AttestationModes(), c.Attestation) {
		ps = append(ps, fmt.Sprintf("attestation %q: one of %s", c.Attestation, strings.Join(AttestationModes(), ", ")))
	}
	if _, err := ParseAttestationPCRs(c.AttestationPCRs); err != nil {
		ps = append(ps, "attestation_pcrs: "+err.Error())
	}
	if len(ps) > 0 {
		return c, fmt.Errorf("approver configuration: %s", strings.Join(ps, "; "))
	}
	return c, nil
}

// EnvConfig is the provider configuration the approver opens its AWS
// clients with: the region and the residency policy of the footprint's
// provider, so that the approver's own endpoints are held to the
// jurisdiction as the provider's are.
func (c ApproverConfig) EnvConfig() Config {
	return Config{Region: c.Region, Residency: residency.PolicyConfig{Jurisdiction: c.Jurisdiction,
		AllowedRegions: c.AllowedRegions, ExcludedZoneIDs: c.ExcludedZoneIDs}}
}

// spec is the validation settings the configuration carries.
func (c ApproverConfig) spec() ValidationSpec {
	return ValidationSpec{Wait: true, Timeout: time.Duration(c.TimeoutSeconds) * time.Second, OnFailure: c.OnFailure,
		ReportsS3URI: c.ReportsS3URI, ReportsKMSKeyARN: c.ReportsKMSKeyARN, TrustedCertificates: c.TrustedCertificates,
		Attestation: c.Attestation, AttestationRoots: c.AttestationRoots, AttestationPCRs: maps.Clone(c.AttestationPCRs)}.WithDefaults()
}

// Approval is what one approver round decided.
type Approval struct {
	// Completed maps each instance whose action the round completed to
	// its result.
	Completed map[string]string
	// Verdicts are the gate's verdicts on the instances judged.
	Verdicts []NodeVerdict
	// Left are the instances whose terminate action the round completed:
	// Auto Scaling held them (a scale-in, a refresh, a replacement) while
	// their node left Slurm, and it has now (or never joined).
	Left []string
}

// ApproveLaunches runs the gate once over the instances of footprint
// c.Footprint that wait for their launch action now: each gets this
// round's challenge and passes only with an answer that the gate accepts,
// within the validation timeout. Passing instances are put in service;
// failing ones abandoned (the group launches others), or put in service
// under on_failure = "warn". Instances still silent at the deadline are
// abandoned: missing evidence never passes. Instances that start waiting
// during the round are left to the next.
func (e *Env) ApproveLaunches(ctx context.Context, c ApproverConfig, progress func(string, ...any)) (Approval, error) {
	if c.Region != e.Region() {
		return Approval{}, fmt.Errorf("approver configuration for region %s, but the approver runs against %s", c.Region, e.Region())
	}
	group := CPUFootprintResourceName(c.Footprint)
	resource := "CPU footprint " + c.Footprint
	v := c.spec()
	if v.OnFailure == OnFailureReplace {
		// An abandoned instance is replaced by the group; the round does
		// not wait for the replacement.
		v.OnFailure = OnFailureFail
	}
	a := newLaunchApprover(e, group, resource, v, progress)
	g, err := cloud.FindFootprintGroup(ctx, e.Clients.AutoScaling, group)
	if err != nil {
		return Approval{}, fmt.Errorf("approving the launches of %s: %w", resource, err)
	}
	a.observe(g.Instances)
	left, err := e.approveSlurmLeaves(ctx, group, v.ReportsPrefix(c.Footprint), g.Instances)
	if err != nil {
		return Approval{Left: left}, fmt.Errorf("letting the terminating instances of %s go: %w", resource, err)
	}
	if len(left) > 0 {
		a.progress("%s: instances %s left Slurm: terminating", resource, strings.Join(left, ", "))
	}
	var nodes []ExpectedNode
	for _, in := range g.Instances {
		if a.waiting[in.ID] {
			nodes = append(nodes, ExpectedNode{Index: len(nodes), InstanceID: in.ID, Zone: in.ZoneName})
		}
	}
	if len(nodes) == 0 {
		return Approval{Completed: map[string]string{}, Left: left}, nil
	}
	zoneID, err := e.zoneIDsByName(ctx)
	if err != nil {
		return Approval{}, err
	}
	for i, n := range nodes {
		nodes[i].ZoneID = zoneID[n.Zone]
	}
	a.progress("%s: approving %d waiting instance(s): %s", resource, len(nodes), strings.Join(instanceIDs(nodes), ", "))
	res, gateErr := e.runGate(ctx, gateRun{
		Resource: resource, Spec: v, Profile: c.Profile, Prefix: v.ReportsPrefix(c.Footprint), Progress: a.progress, Attested: c.Attested,
		Nodes: func(ctx context.Context) ([]ExpectedNode, int, error) {
			g, err := cloud.FindFootprintGroup(ctx, e.Clients.AutoScaling, group)
			if err != nil {
				return nil, 0, err
			}
			a.observe(g.Instances)
			// Judged until decided: an instance completed, or gone, is no
			// longer waited for.
			return slices.DeleteFunc(slices.Clone(nodes), func(n ExpectedNode) bool { return !a.waiting[n.InstanceID] }), 0, nil
		},
		Judged: a.judged,
	})
	out := Approval{Completed: a.done, Verdicts: res.Nodes, Left: left}
	err = a.afterGate(ctx, res, gateErr)
	var ge *GateError
	if errors.As(err, &ge) && ge.Timeout > 0 {
		// Silent instances: abandoned now rather than held to their
		// heartbeat.
		rctx, cancel := recordContext(ctx, RecordTimeout)
		defer cancel()
		for _, n := range res.Nodes {
			if n.Status == NodeMissing {
				if cerr := a.complete(rctx, n.InstanceID, cloud.LifecycleAbandon); cerr != nil {
					return out, fmt.Errorf("%w; abandoning %s failed too (%v)", err, n.InstanceID, cerr)
				}
			}
		}
	}
	return out, err
}

// approveSlurmLeaves completes the terminate actions of the instances the
// group holds in Terminating:Wait whose node left Slurm, when the group
// carries the footprint's terminate hook (cloud.SlurmLeaveHook).
func (e *Env) approveSlurmLeaves(ctx context.Context, group, prefix string, in []cloud.FootprintInstance) ([]string, error) {
	if !slices.ContainsFunc(in, func(i cloud.FootprintInstance) bool { return i.LifecycleState == cloud.LifecycleTerminatingWait }) {
		return nil, nil
	}
	if _, err := cloud.FindHook(ctx, e.Clients.AutoScaling, group, cloud.SlurmLeaveHookName); errors.Is(err, cloud.ErrNotFound) {
		return nil, nil // another's hook holds them
	} else if err != nil {
		return nil, err
	}
	res, err := e.completeSlurmLeaves(ctx, group, prefix, in)
	return res.Completed, err
}

// zoneIDsByName maps the region's zone names to their zone ids.
func (e *Env) zoneIDsByName(ctx context.Context) (map[string]string, error) {
	zones, err := e.Zones(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]string{}
	for _, z := range zones {
		byName[z.Name] = z.ID
	}
	return byName, nil
}

func instanceIDs(nodes []ExpectedNode) []string {
	var ids []string
	for _, n := range nodes {
		ids = append(ids, n.InstanceID)
	}
	return ids
}
