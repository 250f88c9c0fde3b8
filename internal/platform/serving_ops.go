package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// ServingWait bounds and reports a serving endpoint wait.
type ServingWait = WaitOptions

var (
	// ErrServingEndpointResidency is wrapped when a write is refused because
	// the residency policy (enforce mode) is broken.
	ErrServingEndpointResidency = errors.New("serving endpoint breaks the residency policy")
	// ErrServingEndpointExists is wrapped when an endpoint of the name exists
	// that this resource cannot prove it created.
	ErrServingEndpointExists = errors.New("an endpoint of that name already exists")
	// ErrServingRolledBack is wrapped when an update ended with the endpoint
	// InService on its old config: SageMaker rolled the deployment back.
	ErrServingRolledBack = errors.New("SageMaker rolled the update back")
)

// CheckServingEndpoint is the plan-time check, the same for both front ends:
// the spec is validated, and when valid its residency is checked (the
// image's registry, the model data and capture buckets, the KMS keys, the
// role, the required tags, and the zones of vpc_config's subnets, which must
// exist, with security groups of their VPC). Warnings say where a deployment guardrail falls
// back to all at once, and why an endpoint on local instance storage needs
// no volume key where customer managed keys are required. Values at the paths in unknown are skipped: create
// and update check again, all known, before any write.
func (e *Env) CheckServingEndpoint(ctx context.Context, s ServingEndpointSpec, unknown []string) ([]Problem, []residency.Violation, []Problem, error) {
	errs, vs, err := e.checkServing(ctx, s, unknown)
	if err != nil || len(errs) > 0 {
		return errs, vs, nil, err
	}
	if errs, err := e.CheckServingAlarms(ctx, s, unknown); err != nil || len(errs) > 0 {
		return errs, vs, nil, err
	}
	return nil, vs, append(ServingVolumeKeyNote(s, unknown, e.Policy.RequireCustomerManagedKeys), ServingDeploymentWarnings(s, unknown)...), nil
}

// CheckServingEndpointCreate is the plan-time check of a planned create,
// the same for both front ends: a create cannot adopt an endpoint, so an
// endpoint of the name that carries no creation token (made outside this
// provider) is refused on the name attribute, with the fix (import it, or
// choose another name), before any write. An endpoint that carries a token
// passes: it may be this resource's own, tainted and planned for
// replacement (Terraform plans the create half of a replacement without
// prior state); the create refuses it at apply when its token is not this
// create's. It makes one DescribeEndpoint (and lists the tags of an
// endpoint it finds). A name not known yet is not checked here: the create
// refuses it at apply.
func (e *Env) CheckServingEndpointCreate(ctx context.Context, name string) ([]Problem, error) {
	return checkServingCreate(ctx, e.Clients.SageMaker, name)
}

func checkServingCreate(ctx context.Context, api cloud.ServingAPI, name string) ([]Problem, error) {
	found, err := cloud.FindServingEndpoint(ctx, api, name)
	if errors.Is(err, cloud.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("looking for an endpoint named %s: %w", name, err)
	}
	if found.Tags[ServingEndpointTokenTag] != "" {
		return nil, nil
	}
	return []Problem{{Path: "name", Detail: fmt.Sprintf("%v: endpoint %s (%s, %s) exists and carries no %s tag: it was made outside this provider. A create cannot adopt an endpoint it did not make: import it to manage it here, or choose another name",
		ErrServingEndpointExists, name, found.ARN, found.Status, ServingEndpointTokenTag)}}, nil
}

// checkServing validates s and, when valid, checks its network against EC2
// (checkServingNetwork) and its residency: the problems, then the
// violations. Values at the paths in unknown are skipped.
func (e *Env) checkServing(ctx context.Context, s ServingEndpointSpec, unknown []string) ([]Problem, []residency.Violation, error) {
	if errs := ValidateServingEndpoint(s, unknown); len(errs) > 0 {
		return errs, nil, nil
	}
	errs, zones, err := e.checkServingNetwork(ctx, s, unknown)
	if err != nil {
		return nil, nil, err
	}
	vs, err := e.checkServingResidency(ctx, s, unknown, zones)
	if err != nil {
		return nil, nil, err
	}
	return errs, vs, nil
}

func (e *Env) checkServingResidency(ctx context.Context, s ServingEndpointSpec, unknown []string, more []residency.Ref) ([]residency.Violation, error) {
	tagsPath := ServingEndpointTagsPath
	if slices.Contains(unknown, ServingEndpointTagsPath) {
		tagsPath = ""
	}
	vs, err := e.CheckResidency(ctx, append(ServingEndpointResidencyRefs(s, unknown), more...), s.Tags, tagsPath)
	if err != nil {
		return nil, fmt.Errorf("checking residency of serving endpoint %s: %w", s.Name, err)
	}
	return vs, nil
}

// guardServing validates s and checks its network and residency, all
// values known (those known only at apply are checked here). In enforce
// mode violations are an error too.
func (e *Env) guardServing(ctx context.Context, s ServingEndpointSpec) ([]residency.Violation, error) {
	errs, vs, err := e.checkServing(ctx, s, nil)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return vs, &RefusedError{Kind: "serving endpoint", Problems: errs}
	}
	if len(vs) > 0 && e.Policy.Enforcing() {
		return vs, fmt.Errorf("%w: %s", ErrServingEndpointResidency, residency.Summarize(vs))
	}
	return vs, nil
}

// servingNames returns fresh names for a model and an endpoint config of the
// endpoint: the endpoint's name with a random suffix, so an update never
// collides with the config it replaces (SageMaker cannot rename a config).
func servingNames(endpoint string) (model, config string) {
	name := servingNamePrefix(endpoint) + NewCreationToken()[:8]
	return name, name
}

// FindServingEndpoint reads an endpoint, the config it serves and that
// config's model. A missing endpoint is ErrNotFound.
func (e *Env) FindServingEndpoint(ctx context.Context, name string) (*ServingEndpoint, error) {
	ep, err := findServing(ctx, e.Clients.SageMaker, name)
	if err != nil {
		return nil, err
	}
	if err := withServingScaling(ctx, e.Clients.AppAutoScaling, ep); err != nil {
		return nil, fmt.Errorf("reading autoscaling of endpoint %s: %w", name, err)
	}
	return ep, nil
}

func findServing(ctx context.Context, api cloud.ServingAPI, name string) (*ServingEndpoint, error) {
	ep, err := cloud.FindServingEndpoint(ctx, api, name)
	if err != nil {
		return nil, err
	}
	return describeServing(ctx, api, ep)
}

// describeServing adds the config and model to what the endpoint says.
func describeServing(ctx context.Context, api cloud.ServingAPI, ep *cloud.ServingEndpointInfo) (*ServingEndpoint, error) {
	var cfg *cloud.ServingEndpointConfigInfo
	var model *cloud.ServingModelInfo
	if ep.ConfigName != "" {
		c, err := cloud.FindServingEndpointConfig(ctx, api, ep.ConfigName)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			cfg = c
		}
	}
	if cfg != nil && len(cfg.Variants) > 0 && cfg.Variants[0].ModelName != "" {
		m, err := cloud.FindServingModel(ctx, api, cfg.Variants[0].ModelName)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			model = m
		}
	}
	return servingEndpointFrom(ep, cfg, model), nil
}

// findServingAfterFailure reads the endpoint on a fresh, short, bounded
// context (ctx's values kept, its cancellation not).
func findServingAfterFailure(ctx context.Context, api cloud.ServingAPI, name string) (*ServingEndpoint, error) {
	ctx, cancel := recordContext(ctx, servingRecordTimeout)
	defer cancel()
	return findServing(ctx, api, name)
}

// cleanupServing deletes a config and a model this verb made and no endpoint
// serves, on a fresh bounded context; what it could not delete comes back as
// warnings.
func cleanupServing(ctx context.Context, api cloud.ServingAPI, config, model string) []string {
	ctx, cancel := recordContext(ctx, servingRecordTimeout)
	defer cancel()
	var out []string
	if config != "" {
		if err := cloud.DeleteServingEndpointConfig(ctx, api, config); err != nil {
			out = append(out, fmt.Sprintf("endpoint config %s is left over and no endpoint uses it: %v; delete it with the SageMaker console or CLI", config, err))
		}
	}
	if model != "" {
		if err := cloud.DeleteServingModel(ctx, api, model); err != nil {
			out = append(out, fmt.Sprintf("model %s is left over and no endpoint uses it: %v; delete it with the SageMaker console or CLI", model, err))
		}
	}
	return out
}

// CreateServingEndpoint validates s, checks its residency (fail closed:
// everything is known now), creates the model, an endpoint config and the
// endpoint (generated model and config names; the default tags and a fresh
// creation token on each), and waits until the endpoint is InService.
//
// Whenever the endpoint exists after a failure (the wait timed out or was
// interrupted, the endpoint Failed), the returned ServingEndpoint is not
// nil: the caller records it, so that it is never orphaned. An endpoint of
// the name that this create cannot prove it made is refused with
// ErrServingEndpointExists.
func (e *Env) CreateServingEndpoint(ctx context.Context, s ServingEndpointSpec, wait ServingWait) (*ServingEndpoint, []residency.Violation, error) {
	vs, err := e.guardServing(ctx, s)
	if err != nil {
		return nil, vs, err
	}
	token := NewCreationToken()
	if wantsAlarms(s) {
		// A standard alarm's name taken already is refused before anything
		// is made: none can be this new endpoint's.
		if err := checkAlarmsOwned(ctx, e.Clients.CloudWatch(), s, token); err != nil {
			return nil, vs, fmt.Errorf("creating endpoint %s: %w", s.Name, err)
		}
	}
	ep, err := createServing(ctx, e.Clients.SageMaker, e.Clients.AppAutoScaling, s, e.MergeTags(s.Tags), token, e.withPolling(wait))
	if err == nil && wantsAlarms(s) {
		err = alarmsAfterCreate(ctx, e.Clients.CloudWatch(), s, e.MergeTags(s.Tags), ep)
	}
	return ep, vs, err
}

func createServing(ctx context.Context, api cloud.ServingAPI, as cloud.ServingScalingAPI, s ServingEndpointSpec, tags map[string]string, token string, wait ServingWait) (*ServingEndpoint, error) {
	if wait.Timeout <= 0 {
		wait.Timeout = ServingEndpointCreateTimeout
	}
	tags = cloneTags(tags)
	tags[ServingEndpointTokenTag] = token
	modelName, configName, err := createModelAndConfig(ctx, api, s, tags)
	if err != nil {
		return nil, err
	}
	arn, err := cloud.CreateServingEndpoint(ctx, api, s.Name, configName, tags)
	if err != nil {
		found, ferr := findServingAfterFailure(ctx, api, s.Name)
		if errors.Is(ferr, cloud.ErrNotFound) && !errors.Is(err, cloud.ErrServingExists) {
			// A call in flight when the client gave up may still land.
			w := landingRecheck().Start()
			for range 2 {
				if w.Next(context.WithoutCancel(ctx)) != nil {
					break
				}
				if found, ferr = findServingAfterFailure(ctx, api, s.Name); !errors.Is(ferr, cloud.ErrNotFound) {
					break
				}
			}
		}
		ours := ferr == nil && found.CreationToken == token
		switch {
		case ours && ctx.Err() == nil:
			arn = found.ARN // created; only the answer was lost
		case ours:
			return found, fmt.Errorf("endpoint %s was created (%s), but the create was interrupted before it was in service: %w", s.Name, found.ARN, err)
		case errors.Is(err, cloud.ErrServingExists) || ferr == nil:
			ws := cleanupServing(ctx, api, configName, modelName)
			return nil, errors.Join(fmt.Errorf("creating endpoint %s: %w and this resource did not create it (its %s tag does not match): import it to manage it here, or choose another name",
				s.Name, ErrServingEndpointExists, ServingEndpointTokenTag), warningsErr(ws))
		case errors.Is(ferr, cloud.ErrNotFound):
			return nil, fmt.Errorf("%w; endpoint %s was not found afterwards (model %s and endpoint config %s were created for it and are left; should the endpoint appear later, it carries the tag %s = %s: import it)",
				err, s.Name, modelName, configName, ServingEndpointTokenTag, token)
		default:
			return nil, fmt.Errorf("%w; whether endpoint %s was created could not be checked (%w). Should it exist, it carries the tag %s = %s: import it", err, s.Name, ferr, ServingEndpointTokenTag, token)
		}
	}
	info, err := cloud.WaitServingEndpoint(ctx, api, s.Name, wait.cloud())
	if err != nil {
		found, ferr := findServingAfterFailure(ctx, api, s.Name)
		if ferr != nil {
			found = &ServingEndpoint{Spec: s, ARN: arn, Status: "Unknown", ConfigName: configName, ModelName: modelName, CreationToken: token}
		}
		return found, fmt.Errorf("endpoint %s was created (%s) but was not seen in service: %w", s.Name, arn, err)
	}
	ep, err := describeServing(ctx, api, info)
	if err != nil {
		return nil, fmt.Errorf("reading endpoint %s after create: %w", s.Name, err)
	}
	ep.LastDeployment = DeploymentCreated
	if as == nil {
		return ep, nil
	}
	// Autoscaling acts on a variant only once its endpoint is in service.
	have, err := cloud.FindServingScaling(ctx, as, s.Name)
	if err == nil {
		err = applyServingScaling(ctx, as, s, have)
	}
	if err != nil {
		rctx, cancel := recordContext(ctx, servingRecordTimeout)
		defer cancel()
		_ = withServingScaling(rctx, as, ep) // what is registered, for the record
		return ep, fmt.Errorf("endpoint %s is in service, but its autoscaling was not set (the next apply sets it): %w", s.Name, err)
	}
	if err := withServingScaling(ctx, as, ep); err != nil {
		return ep, fmt.Errorf("reading autoscaling of endpoint %s after create: %w", s.Name, err)
	}
	return ep, nil
}

func warningsErr(ws []string) error {
	if len(ws) == 0 {
		return nil
	}
	return errors.New(strings.Join(ws, "\n"))
}

func cloneTags(tags map[string]string) map[string]string {
	out := make(map[string]string, len(tags)+1)
	for k, v := range tags {
		out[k] = v
	}
	return out
}

// createModelAndConfig creates a model and an endpoint config under fresh
// names. A create whose answer was lost is recognised by the name, which
// nothing else uses. On failure nothing of this call is left: a create that
// may still land (interrupted, timed out, lost) is looked for over a few
// seconds and deleted.
func createModelAndConfig(ctx context.Context, api cloud.ServingAPI, s ServingEndpointSpec, tags map[string]string) (string, string, error) {
	modelName, configName := servingNames(s.Name)
	findModel := func(c context.Context) error {
		_, err := cloud.FindServingModel(c, api, modelName)
		return err
	}
	findConfig := func(c context.Context) error {
		_, err := cloud.FindServingEndpointConfig(c, api, configName)
		return err
	}
	if _, err := cloud.CreateServingModel(ctx, api, servingModelConfig(modelName, s, tags)); err != nil {
		if landed(ctx, err, findModel) && ctx.Err() == nil {
			// created; only the answer was lost
		} else {
			return "", "", errors.Join(err, warningsErr(cleanupServing(ctx, api, "", modelName)))
		}
	}
	if _, err := cloud.CreateServingEndpointConfig(ctx, api, servingConfigSpec(configName, modelName, s, tags)); err != nil {
		if landed(ctx, err, findConfig) && ctx.Err() == nil {
			return modelName, configName, nil
		}
		return "", "", errors.Join(err, warningsErr(cleanupServing(ctx, api, configName, modelName)))
	}
	return modelName, configName, nil
}

// landed reports whether a create that failed with err took effect anyway:
// its answer lost, the retry told the name is taken, or the call still in
// flight when the client gave up. The thing is looked for under the fresh
// name only this call used, on a fresh bounded context, again after a
// second and three seconds (landingRecheck) unless the service refused the
// call outright.
func landed(ctx context.Context, err error, find func(context.Context) error) bool {
	rctx, cancel := recordContext(ctx, servingRecordTimeout)
	defer cancel()
	if find(rctx) == nil {
		return true
	}
	if ctx.Err() == nil && cloud.IsRefused(err) && !errors.Is(err, cloud.ErrServingExists) {
		return false
	}
	w := landingRecheck().Start()
	for range 2 {
		if w.Next(rctx) != nil {
			return false
		}
		if find(rctx) == nil {
			return true
		}
	}
	return false
}

// ServingEndpointPrior is what the front end's state holds of an endpoint
// before an update.
type ServingEndpointPrior struct {
	Spec       ServingEndpointSpec
	ConfigName string
	ModelName  string
}

// UpdateServingEndpoint moves the endpoint from prior to s. A change of the
// model, the variants, the data capture or the key is a blue/green update:
// a new model and endpoint config (fresh names), UpdateEndpoint with the
// deployment config, a wait until the endpoint settles; then the endpoint's
// config name is compared with the new one, and an endpoint back InService
// on its old config is ErrServingRolledBack with SageMaker's failure reason
// (the new config and model, which nothing uses, are deleted). The old
// config and model are deleted only once the new config serves. Tags are
// changed in place; a change of the deployment alone changes nothing in AWS.
func (e *Env) UpdateServingEndpoint(ctx context.Context, prior ServingEndpointPrior, s ServingEndpointSpec, wait ServingWait) (*ServingEndpoint, []residency.Violation, error) {
	vs, err := e.guardServing(ctx, s)
	if err != nil {
		return nil, vs, err
	}
	if !wantsAlarms(s) && !wantsAlarms(prior.Spec) {
		ep, err := updateServing(ctx, e.Clients.SageMaker, e.Clients.AppAutoScaling, prior, s, e.MergeTags(s.Tags), e.withPolling(wait))
		return ep, vs, err
	}
	cw := e.Clients.CloudWatch()
	owner, err := alarmsBeforeUpdate(ctx, e.Clients.SageMaker, cw, s, e.MergeTags(s.Tags))
	if err != nil {
		return nil, vs, err
	}
	ep, err := updateServing(ctx, e.Clients.SageMaker, e.Clients.AppAutoScaling, prior, s, e.MergeTags(s.Tags), e.withPolling(wait))
	if err != nil {
		if ep != nil {
			rctx, cancel := recordContext(ctx, servingRecordTimeout)
			_ = withServingAlarms(rctx, cw, ep)
			cancel()
		}
		return ep, vs, err
	}
	return ep, vs, alarmsAfterUpdate(ctx, cw, s, e.MergeTags(s.Tags), owner, ep)
}

func updateServing(ctx context.Context, api cloud.ServingAPI, as cloud.ServingScalingAPI, prior ServingEndpointPrior, s ServingEndpointSpec, tags map[string]string, wait ServingWait) (*ServingEndpoint, error) {
	if wait.Timeout <= 0 {
		wait.Timeout = ServingEndpointUpdateTimeout
	}
	cur, err := cloud.FindServingEndpoint(ctx, api, s.Name)
	if err != nil {
		return nil, fmt.Errorf("reading endpoint %s before update: %w", s.Name, err)
	}
	if cur.Status != cloud.EndpointInService {
		// An earlier apply left it changing: let it settle first.
		if cur, err = cloud.WaitServingEndpoint(ctx, api, s.Name, wait.cloud()); err != nil {
			return nil, fmt.Errorf("endpoint %s is not in service, so it cannot be updated: %w", s.Name, err)
		}
	}
	current, err := describeServing(ctx, api, cur)
	if err != nil {
		return nil, fmt.Errorf("reading endpoint %s before update: %w", s.Name, err)
	}
	// What an earlier update cut off by its timeout left: configs and
	// models this resource made that the endpoint no longer serves.
	_, warnings := sweepServing(ctx, api, s.Name, current.CreationToken, cur.ConfigName, current.ModelName)
	// A count changed by autoscaling is not a change of the config.
	countsOwnedByScaling(current, s)
	var have map[string]cloud.ServingScaling
	if as != nil {
		if have, err = cloud.FindServingScaling(ctx, as, s.Name); err != nil {
			return nil, fmt.Errorf("reading autoscaling of endpoint %s before update: %w", s.Name, err)
		}
	}
	lastDeployment := ""
	if PlanServingEndpoint(current.Spec, s, nil).NewConfig() {
		oldConfig, oldModel := cur.ConfigName, current.ModelName
		modelName, configName, err := createModelAndConfig(ctx, api, s, cloneTagsWith(tags, current.CreationToken))
		if err != nil {
			return nil, err
		}
		// A scaled variant whose instance type changes, or that goes
		// away, is deregistered first: Application Auto Scaling refuses
		// the update otherwise. It is registered again once the new
		// config serves.
		for _, name := range scalingBlockedByUpdate(current.Spec, s, have) {
			if err := cloud.DeleteServingScaling(ctx, as, s.Name, name); err != nil {
				return nil, errors.Join(err, warningsErr(cleanupServing(ctx, api, configName, modelName)))
			}
			delete(have, name)
		}
		if err := cloud.UpdateServingEndpoint(ctx, api, s.Name, configName, servingDeployment(s)); err != nil {
			// The answer may be lost and the update under way: the
			// endpoint says so.
			rctx, cancel := recordContext(ctx, servingRecordTimeout)
			after, ferr := cloud.FindServingEndpoint(rctx, api, s.Name)
			cancel()
			if ferr != nil || (after.Status != cloud.EndpointUpdating && after.ConfigName != configName) {
				return nil, errors.Join(err, warningsErr(cleanupServing(ctx, api, configName, modelName)))
			}
		}
		info, err := cloud.WaitServingEndpoint(ctx, api, s.Name, wait.cloud())
		if err != nil {
			// Still deploying, or failed: leave both configs; the next
			// apply sees which one serves.
			return nil, fmt.Errorf("updating endpoint %s to endpoint config %s: %w", s.Name, configName, err)
		}
		if info.ConfigName != configName {
			ws := cleanupServing(ctx, api, configName, modelName)
			reason := info.FailureReason
			if reason == "" {
				reason = "SageMaker gave no reason"
			}
			rolled, derr := describeServing(ctx, api, info)
			if derr != nil {
				rolled = &ServingEndpoint{Spec: prior.Spec, ARN: info.ARN, Status: info.Status, ConfigName: info.ConfigName, ModelName: prior.ModelName}
			}
			if as != nil {
				// The old config serves again: so does its autoscaling.
				rctx, cancel := recordContext(ctx, servingRecordTimeout)
				old := prior.Spec
				old.Name = s.Name
				if err := applyServingScaling(rctx, as, old, have); err != nil {
					ws = append(ws, fmt.Sprintf("the autoscaling of the old config could not be restored: %v; the next apply sets it", err))
				}
				_ = withServingScaling(rctx, as, rolled)
				cancel()
			}
			rolled.LastDeployment = DeploymentRolledBack
			rolled.FailureReason = info.FailureReason
			rolled.Warnings = ws
			return rolled, fmt.Errorf("updating endpoint %s: %w: the endpoint is in service on its old endpoint config %s, not on the new %s: %s",
				s.Name, ErrServingRolledBack, info.ConfigName, configName, reason)
		}
		// The new config serves: the old one and its model can go.
		if oldConfig != "" && oldConfig != configName {
			warnings = append(warnings, cleanupServing(ctx, api, oldConfig, "")...)
		}
		if oldModel != "" && oldModel != modelName {
			warnings = append(warnings, cleanupServing(ctx, api, "", oldModel)...)
		}
		lastDeployment = DeploymentUpdated
		cur = info
	}
	keep := []string{ServingEndpointTokenTag}
	if err := cloud.SetServingTags(ctx, api, cur.ARN, tags, keep); err != nil {
		return nil, fmt.Errorf("updating tags of endpoint %s: %w", s.Name, err)
	}
	if as != nil {
		// After the new config serves: register, change or deregister.
		if err := applyServingScaling(ctx, as, s, have); err != nil {
			return nil, fmt.Errorf("updating autoscaling of endpoint %s: %w", s.Name, err)
		}
	}
	ep, err := findServing(ctx, api, s.Name)
	if err != nil {
		return nil, fmt.Errorf("reading endpoint %s after update: %w", s.Name, err)
	}
	if err := withServingScaling(ctx, as, ep); err != nil {
		return nil, fmt.Errorf("reading autoscaling of endpoint %s after update: %w", s.Name, err)
	}
	ep.LastDeployment = lastDeployment
	ep.Warnings = warnings
	return ep, nil
}

func cloneTagsWith(tags map[string]string, token string) map[string]string {
	out := cloneTags(tags)
	if token != "" {
		out[ServingEndpointTokenTag] = token
	}
	return out
}

// DeleteServingEndpoint deletes the endpoint and waits until it is gone,
// then its endpoint config and model, in that order (a config or model goes
// only once no endpoint serves it). known names the config and model the
// state recorded, deleted too when the endpoint is gone already. Anything
// already gone is not an error.
func (e *Env) DeleteServingEndpoint(ctx context.Context, name string, known ServingEndpointPrior, wait ServingWait) error {
	return deleteServingWithAlarms(ctx, e.Clients.SageMaker, e.Clients.AppAutoScaling, e.Clients.CloudWatch(), name, known, e.withPolling(wait))
}

func deleteServing(ctx context.Context, api cloud.ServingAPI, as cloud.ServingScalingAPI, name string, known ServingEndpointPrior, wait ServingWait) error {
	if wait.Timeout <= 0 {
		wait.Timeout = ServingEndpointDeleteTimeout
	}
	configs, models := []string{}, []string{}
	addName := func(list *[]string, n string) {
		if n != "" && !slices.Contains(*list, n) {
			*list = append(*list, n)
		}
	}
	// Autoscaling goes first: it would act on a deleting endpoint.
	if as != nil {
		if err := deleteAllServingScaling(ctx, as, name); err != nil {
			return err
		}
	}
	token := ""
	cur, err := findServing(ctx, api, name)
	switch {
	case errors.Is(err, cloud.ErrNotFound):
	case err != nil:
		return fmt.Errorf("reading endpoint %s before delete: %w", name, err)
	default:
		addName(&configs, cur.ConfigName)
		addName(&models, cur.ModelName)
		token = cur.CreationToken
		if err := cloud.DeleteServingEndpoint(ctx, api, name); err != nil {
			return err
		}
		if err := cloud.WaitServingEndpointDeleted(ctx, api, name, wait.cloud()); err != nil {
			return err
		}
	}
	addName(&configs, known.ConfigName)
	addName(&models, known.ModelName)
	for _, c := range configs {
		if err := cloud.DeleteServingEndpointConfig(ctx, api, c); err != nil {
			return err
		}
	}
	for _, m := range models {
		if err := cloud.DeleteServingModel(ctx, api, m); err != nil {
			return err
		}
	}
	// Configs and models of updates cut off before their clean-up.
	if _, ws := sweepServing(ctx, api, name, token, "", ""); len(ws) > 0 {
		return fmt.Errorf("endpoint %s is deleted, but not everything it owned: %s", name, strings.Join(ws, "; "))
	}
	return nil
}
