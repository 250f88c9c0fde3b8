package provider_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// servingFault is one way a write call of the serving endpoint goes wrong.
// arm sets it on service's action and returns how often it fired and a
// function that removes it (and waits until a call it held has landed);
// cancel ends the verb's context (an interrupt, as Ctrl-C or a Terraform
// timeout do). own says that the core makes the call on a context of its
// own, which cancel does not end (the cleanup after an update).
type servingFault struct {
	name  string
	arm   func(t *testing.T, h *acctest.Harness, service, action string, own bool, cancel context.CancelFunc) (fired func() int, remove func())
	fails bool // the verb must fail (else the fault was not exercised)
}

// servingFaults are the four faults of the matrix. SageMaker calls go
// through InjectSageMaker and AddServedRule (they wrap the endpoint double
// and moto alike); Application Auto Scaling and CloudWatch calls through
// the shim's rules in front of moto.
func servingFaults() []servingFault {
	sm := func(h *acctest.Harness, action string, f acctest.SageMakerFault) (func() int, func()) {
		var n atomic.Int32
		on := f.OnCall
		f.Action = action
		f.OnCall = func() {
			n.Add(1)
			if on != nil {
				on()
			}
		}
		remove := acctest.InjectSageMaker(h.Shim, f)
		return func() int { return int(n.Load()) }, remove
	}
	// held holds the call until its client has given up on it (the verb is
	// stopped cancelAfter after the call arrived): it lands after the client
	// gave up, however loaded the machine, and within the time the core
	// looks for a call still in flight. A call on the core's own context
	// (own) has a client that does not give up: it is held until the verb
	// was stopped. remove waits until the call has landed.
	held := func(cancelAfter time.Duration) func(*testing.T, *acctest.Harness, string, string, bool, context.CancelFunc) (func() int, func()) {
		return func(t *testing.T, h *acctest.Harness, svc, action string, own bool, cancel context.CancelFunc) (func() int, func()) {
			var n atomic.Int32
			hold := acctest.HoldUntilClientGone(t)
			stop := func() {
				cancel()
				if own {
					hold.Release()
				}
			}
			rule := acctest.FaultRule{Service: svc, Action: action, Times: 1, Hold: hold,
				Before: func(*acctest.Request) { n.Add(1); time.AfterFunc(cancelAfter, stop) }}
			unarm := h.Shim.ClearRules
			if svc == "sagemaker" {
				unarm = h.Shim.AddServedRule(rule)
				t.Cleanup(unarm)
			} else {
				h.Shim.AddRule(rule)
			}
			return func() int { return int(n.Load()) }, func() {
				unarm()
				landHeld(t, hold)
			}
		}
	}
	return []servingFault{
		// The call reaches AWS; the client is stopped while it is served.
		{name: "interrupted", arm: held(0), fails: true},
		// The call is held past the verb's deadline and lands after it.
		{name: "timed out", arm: held(500 * time.Millisecond), fails: true},
		{name: "throttled", arm: func(_ *testing.T, h *acctest.Harness, svc, action string, _ bool, _ context.CancelFunc) (func() int, func()) {
			if svc == "sagemaker" {
				return sm(h, action, acctest.SageMakerFault{Times: 1, Code: "ThrottlingException", Message: "Rate exceeded (injected)"})
			}
			h.Shim.Throttle(svc, action, 1)
			return func() int {
				n := 0
				for _, c := range h.Shim.Calls(svc, action) {
					if c.Source == "fault" {
						n++
					}
				}
				return n
			}, func() {}
		}},
		{name: "lost answer", arm: func(_ *testing.T, h *acctest.Harness, svc, action string, _ bool, _ context.CancelFunc) (func() int, func()) {
			if svc == "sagemaker" {
				return sm(h, action, acctest.SageMakerFault{Times: 1, LoseResponse: true})
			}
			var n atomic.Int32
			h.Shim.AddRule(acctest.FaultRule{Service: svc, Action: action, Times: 1, LoseResponse: true,
				Before: func(*acctest.Request) { n.Add(1) }})
			return func() int { return int(n.Load()) }, h.Shim.ClearRules
		}},
	}
}

func servingMatrixSpec() platform.ServingEndpointSpec {
	return platform.ServingEndpointSpec{
		Name: "fraud",
		Model: platform.ServingModel{
			Image: servingImage, ModelDataURI: "s3://" + servingBucket + "/fraud/model.tar.gz", ExecutionRoleARN: servingRole,
		},
		Variants: []platform.ServingVariant{{
			Name: "primary", InstanceType: "ml.m5.large", InitialInstanceCount: 1,
			Autoscaling: &platform.ServingAutoscaling{Min: 1, Max: 2, TargetInvocations: 100,
				ScaleInCooldownSeconds: platform.ServingDefaultCooldownSeconds, ScaleOutCooldownSeconds: platform.ServingDefaultCooldownSeconds,
				Schedules: []platform.Schedule{
					{Name: "night", Recurrence: "0 20 * * 1-5", Duration: 11 * time.Hour, Max: intPtr(1)},
					{Name: "monday", Recurrence: "30 7 * * mon", Min: intPtr(2)},
				}},
		}},
		Deployment: &platform.ServingDeployment{StandardAlarms: &platform.ServingStandardAlarms{LatencyP99Ms: 500, Error5XXRate: 0.01}},
		Tags:       map[string]string{"team": "fraud"},
	}
}

func intPtr(v int) *int { return &v }

// servingLeft lists what exists in the emulator: endpoint configs, models
// and scalable targets (every one, whoever made it).
func servingLeft(h *acctest.Harness) (configs []string, models int, targets []string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		return nil, 0, nil, err
	}
	if models, err = countServingModels(h); err != nil {
		return nil, 0, nil, err
	}
	ts, err := c.AppAutoScaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker})
	if err != nil {
		return nil, 0, nil, err
	}
	for _, t := range ts.ScalableTargets {
		targets = append(targets, aws.ToString(t.ResourceId))
	}
	return h.SageMakerEndpoints.Configs(acctest.Region), models, targets, nil
}

// checkServingConverged checks in AWS that exactly the declared endpoint
// exists: in service on one config with one model (no orphan), the image
// and the autoscaling declared.
func checkServingConverged(env *platform.Env, h *acctest.Harness, spec platform.ServingEndpointSpec) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep, err := env.FindServingEndpoint(ctx, spec.Name)
	if err != nil {
		return err
	}
	configs, models, targets, err := servingLeft(h)
	switch {
	case err != nil:
		return err
	case ep.Status != "InService" || ep.Spec.Model.Image != spec.Model.Image:
		return fmt.Errorf("endpoint %s serving %s, want InService serving %s", ep.Status, ep.Spec.Model.Image, spec.Model.Image)
	case !slices.Equal(configs, []string{ep.ConfigName}) || models != 1:
		return fmt.Errorf("endpoint configs %v and %d models, want only the serving %s and its model (orphans)", configs, models, ep.ConfigName)
	case ep.Spec.NetworkIsolationOn() != spec.NetworkIsolationOn() || !reflect.DeepEqual(ep.Spec.VPC, spec.VPC):
		return fmt.Errorf("the model's network: isolation %v, VPC %+v; want %v, %+v", ep.Spec.NetworkIsolationOn(), ep.Spec.VPC, spec.NetworkIsolationOn(), spec.VPC)
	case len(targets) != 1 || ep.Spec.Variants[0].Autoscaling == nil || !reflect.DeepEqual(withoutSchedules(*ep.Spec.Variants[0].Autoscaling), withoutSchedules(*spec.Variants[0].Autoscaling)):
		return fmt.Errorf("scalable targets %v, autoscaling %+v, want %+v", targets, ep.Spec.Variants[0].Autoscaling, spec.Variants[0].Autoscaling)
	}
	// The scheduled actions: every declared schedule's as declared (the
	// read-back keeps only those), and no other.
	rb := env.ReadBackServingEndpoint(ep, spec, "")
	want := spec.Variants[0].Autoscaling.Schedules
	if got := rb.Spec.Variants[0].Autoscaling.Schedules; !reflect.DeepEqual(got, want) {
		return fmt.Errorf("schedules read back %+v, want %+v", got, want)
	}
	acts, err := scheduledActions(h)
	if err != nil {
		return err
	}
	n := 0
	for _, s := range want {
		n++
		if s.Duration != 0 {
			n++
		}
	}
	if len(acts) != n {
		return fmt.Errorf("scheduled actions %q, want %d (orphans)", acts, n)
	}
	return checkMatrixAlarms(h, spec)
}

func withoutSchedules(a platform.ServingAutoscaling) platform.ServingAutoscaling {
	a.Schedules = nil
	return a
}

func checkServingNothingLeft(h *acctest.Harness) error {
	configs, models, targets, err := servingLeft(h)
	if err != nil {
		return err
	}
	if len(configs) > 0 || models > 0 || len(targets) > 0 {
		return fmt.Errorf("left: endpoint configs %v, %d models, scalable targets %v", configs, models, targets)
	}
	if acts, err := scheduledActions(h); err != nil || len(acts) > 0 {
		return fmt.Errorf("left: scheduled actions %q (%v)", acts, err)
	}
	if alarms, err := matrixAlarms(h); err != nil || len(alarms) > 0 {
		return fmt.Errorf("standard alarms left: %v (%v)", alarms, err)
	}
	return checkServingGone(h)(nil)
}

func priorOf(ep *platform.ServingEndpoint) platform.ServingEndpointPrior {
	return platform.ServingEndpointPrior{Spec: ep.Spec, ConfigName: ep.ConfigName, ModelName: ep.ModelName}
}

// TestAccServingEndpoint_faultMatrix runs the core's create, update and
// delete of a serving endpoint (with autoscaling and scheduled scaling) with each write call
// interrupted, timed out, throttled and answered with a lost response,
// against the emulator (moto, the endpoint double). Each cell then does what
// the front end would do next: a create that returned an endpoint is
// recorded and tainted (deleted, then created again); a create that
// returned none must have left nothing; a failed update is refreshed and
// applied again; a failed delete runs again. After every cell: the endpoint
// converged with no orphan config, model, scalable target or scheduled
// action, and after the
// delete nothing is left. A fault that never fired fails its cell.
func TestAccServingEndpoint_faultMatrix(t *testing.T) {
	// Each cell runs against an emulator of its own, in parallel with the
	// others: nothing a failed cell leaves reaches another.
	acctest.ParallelGroup(t)
	cell := func(t *testing.T) (*acctest.Harness, *platform.Env) {
		t.Helper()
		h := acctest.Setup(t)
		servingFixtures(t, h)
		return h, platformEnv(t, h)
	}
	// The endpoint is in the cell's VPC (its subnet ids are the cell's
	// emulator's), network-isolated; the update turns isolation off: a new
	// model of another network.
	inVPC := func(t *testing.T, h *acctest.Harness, s platform.ServingEndpointSpec) platform.ServingEndpointSpec {
		t.Helper()
		n := servingNetwork(t, h)
		s.VPC = &platform.ServingVPC{SubnetIDs: []string{n.Subnets["mec1-az1"], n.Subnets["mec1-az3"]}, SecurityGroupIDs: []string{n.SecurityGroup}}
		return s
	}
	wait := platform.ServingWait{Timeout: 30 * time.Second} // the environment polls every 50ms (platformEnv)
	base := servingMatrixSpec()
	next := servingMatrixSpec()
	next.Model.Image = servingImage2
	next.Variants[0].Autoscaling.Max, next.Variants[0].Autoscaling.TargetInvocations = 3, 200
	// One schedule changed (its actions put again), one gone (deleted).
	next.Variants[0].Autoscaling.Schedules = []platform.Schedule{{Name: "night", Recurrence: "0 21 * * 1-5", Duration: 10 * time.Hour, Max: intPtr(1)}}
	// One tag added, one gone: the alarms are tagged and untagged.
	next.Tags = map[string]string{"stage": "two"}
	next.Deployment = &platform.ServingDeployment{StandardAlarms: &platform.ServingStandardAlarms{LatencyP99Ms: 250, Error5XXRate: 0.05}}
	isolationOff := false
	next.NetworkIsolation = &isolationOff

	type step struct{ service, action string }
	const aas = "application-autoscaling"
	const cw = "monitoring" // CloudWatch, in the credential scope
	// The subnets and security groups are looked up before any write.
	creates := []step{{"ec2", "DescribeSubnets"}, {"ec2", "DescribeSecurityGroups"}, {"sagemaker", "CreateModel"}, {"sagemaker", "CreateEndpointConfig"}, {"sagemaker", "CreateEndpoint"},
		{aas, "RegisterScalableTarget"}, {aas, "PutScalingPolicy"}, {aas, "PutScheduledAction"}, {cw, "PutMetricAlarm"}}
	updates := []step{{"ec2", "DescribeSubnets"}, {"ec2", "DescribeSecurityGroups"}, {"sagemaker", "CreateModel"}, {"sagemaker", "CreateEndpointConfig"}, {"sagemaker", "UpdateEndpoint"},
		{"sagemaker", "DeleteEndpointConfig"}, {"sagemaker", "DeleteModel"}, {aas, "RegisterScalableTarget"}, {aas, "PutScalingPolicy"},
		{aas, "DeleteScheduledAction"}, {aas, "PutScheduledAction"}, {cw, "PutMetricAlarm"}, {cw, "TagResource"}, {cw, "UntagResource"}}
	deletes := []step{{aas, "DeleteScheduledAction"}, {aas, "DeregisterScalableTarget"}, {"sagemaker", "DeleteEndpoint"}, {"sagemaker", "DeleteEndpointConfig"}, {"sagemaker", "DeleteModel"}, {cw, "DeleteAlarms"}}

	create := func(t *testing.T, env *platform.Env, base platform.ServingEndpointSpec) *platform.ServingEndpoint {
		t.Helper()
		ep, _, err := env.CreateServingEndpoint(context.Background(), base, wait)
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	// The update deletes the old config and model on a context of its own
	// (cleanupServing), which stopping the update does not end.
	ownContext := map[step]bool{{"sagemaker", "DeleteEndpointConfig"}: true, {"sagemaker", "DeleteModel"}: true}
	armed := func(t *testing.T, h *acctest.Harness, fault servingFault, st step, own bool, cancel context.CancelFunc) func() {
		t.Helper()
		fired, remove := fault.arm(t, h, st.service, st.action, own, cancel)
		return func() {
			remove()
			h.Shim.ClearRules()
			if fired() == 0 {
				t.Fatalf("the %s fault on %s never fired", fault.name, st.action)
			}
		}
	}
	start := time.Now()
	var cells atomic.Int32
	t.Cleanup(func() { t.Logf("%d cells in %s", cells.Load(), time.Since(start).Round(time.Second)) })
	for _, fault := range servingFaults() {
		for _, st := range creates {
			t.Run(fmt.Sprintf("create/%s/%s", st.action, fault.name), func(t *testing.T) {
				h, env := cell(t)
				base := inVPC(t, h, base)
				cells.Add(1)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				disarm := armed(t, h, fault, st, false, cancel)
				got, _, err := env.CreateServingEndpoint(ctx, base, wait)
				disarm()
				if fault.fails && err == nil {
					t.Fatal("the create succeeded: the fault was not exercised")
				}
				switch {
				case err == nil:
				case got != nil:
					// Recorded and tainted: the next apply replaces it.
					if derr := env.DeleteServingEndpoint(context.Background(), base.Name, priorOf(got), wait); derr != nil {
						t.Fatalf("destroying the tainted endpoint (after %v): %v", err, derr)
					}
					got = create(t, env, base)
				default:
					// Nothing recorded: nothing may exist.
					if left := checkServingNothingLeft(h); left != nil {
						t.Fatalf("the create failed with nothing recorded (%v), yet: %v", err, left)
					}
					got = create(t, env, base)
				}
				if err := checkServingConverged(env, h, base); err != nil {
					t.Fatal(err)
				}
				if err := env.DeleteServingEndpoint(context.Background(), base.Name, priorOf(got), wait); err != nil {
					t.Fatal(err)
				}
				if err := checkServingNothingLeft(h); err != nil {
					t.Fatal(err)
				}
			})
		}
		for _, st := range updates {
			t.Run(fmt.Sprintf("update/%s/%s", st.action, fault.name), func(t *testing.T) {
				h, env := cell(t)
				base, next := inVPC(t, h, base), next
				next.VPC = base.VPC
				cells.Add(1)
				ep := create(t, env, base)
				prior := priorOf(ep)
				prior.Spec.Tags = maps.Clone(base.Tags)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				disarm := armed(t, h, fault, st, ownContext[st], cancel)
				got, _, err := env.UpdateServingEndpoint(ctx, prior, next, wait)
				disarm()
				if fault.fails && err == nil {
					t.Fatal("the update succeeded: the fault was not exercised")
				}
				if err != nil {
					// The state keeps the prior record: refresh, then apply again.
					read, rerr := env.ReadServingEndpoint(context.Background(), base.Name, prior)
					if rerr != nil {
						t.Fatalf("refresh after %v: %v", err, rerr)
					}
					if got, _, err = env.UpdateServingEndpoint(context.Background(), priorOf(read), next, wait); err != nil {
						t.Fatalf("re-apply: %v", err)
					}
				}
				if err := checkServingConverged(env, h, next); err != nil {
					t.Fatal(err)
				}
				if err := env.DeleteServingEndpoint(context.Background(), base.Name, priorOf(got), wait); err != nil {
					t.Fatal(err)
				}
				if err := checkServingNothingLeft(h); err != nil {
					t.Fatal(err)
				}
			})
		}
		for _, st := range deletes {
			t.Run(fmt.Sprintf("delete/%s/%s", st.action, fault.name), func(t *testing.T) {
				h, env := cell(t)
				base := inVPC(t, h, base)
				cells.Add(1)
				ep := create(t, env, base)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				disarm := armed(t, h, fault, st, false, cancel)
				err := env.DeleteServingEndpoint(ctx, base.Name, priorOf(ep), wait)
				disarm()
				if fault.fails && err == nil {
					t.Fatal("the delete succeeded: the fault was not exercised")
				}
				if err != nil {
					// The state keeps the endpoint; destroy runs again.
					if derr := env.DeleteServingEndpoint(context.Background(), base.Name, priorOf(ep), wait); derr != nil && !errors.Is(derr, platform.ErrNotFound) {
						t.Fatalf("second destroy after %v: %v", err, derr)
					}
				}
				if err := checkServingNothingLeft(h); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// matrixAlarms lists the alarms of endpoint fraud in the emulator, whoever
// made them.
func matrixAlarms(h *acctest.Harness) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		return nil, err
	}
	out, err := c.CloudWatch().DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String("mlplatform-fraud-")})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, a := range out.MetricAlarms {
		names = append(names, aws.ToString(a.AlarmName))
	}
	return names, nil
}

// checkMatrixAlarms checks that exactly the standard alarms spec asks for
// exist, with its thresholds.
func checkMatrixAlarms(h *acctest.Harness, spec platform.ServingEndpointSpec) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		return err
	}
	out, err := c.CloudWatch().DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String("mlplatform-fraud-")})
	if err != nil {
		return err
	}
	sa := spec.Deployment.StandardAlarms
	want := map[string]float64{alarmP99: sa.LatencyP99Ms * 1000, alarm5xx: sa.Error5XXRate}
	got := map[string]float64{}
	for _, a := range out.MetricAlarms {
		got[aws.ToString(a.AlarmName)] = aws.ToFloat64(a.Threshold)
		tags, err := acctest.AlarmTags(ctx, c.CloudWatch(), a)
		if err != nil {
			return err
		}
		if user := acctest.UserTags(tags); !maps.Equal(user, spec.Tags) {
			return fmt.Errorf("alarm %s tags %v, want the endpoint's %v", aws.ToString(a.AlarmName), user, spec.Tags)
		}
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("standard alarms %v, want %v", got, want)
	}
	return nil
}
