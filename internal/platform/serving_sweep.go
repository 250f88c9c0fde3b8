package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// servingGeneratedRE matches the suffix servingNames puts after the prefix.
var servingGeneratedRE = lazyRegexp(`^[0-9a-f]{8}$`)

// servingNamePrefix is what every generated model and config name of the
// endpoint starts with.
func servingNamePrefix(endpoint string) string {
	base := endpoint
	if len(base) > svMaxNameLen-9 {
		base = strings.TrimRight(base[:svMaxNameLen-9], "-")
	}
	return base + "-"
}

func isServingGenerated(prefix, name string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	return ok && servingGeneratedRE().MatchString(rest)
}

// ReadServingEndpoint reads the endpoint (FindServingEndpoint) and, when it
// serves another endpoint config than the one recorded (an update cut off
// by its timeout finished after it), deletes the configs and models of the
// endpoint that it owns and no longer serves (sweepServing). What could not
// be deleted comes back in Warnings. A missing endpoint is ErrNotFound.
func (e *Env) ReadServingEndpoint(ctx context.Context, name string, recorded ServingEndpointPrior) (*ServingEndpoint, error) {
	ep, err := readServing(ctx, e.Clients.SageMaker, e.Clients.AppAutoScaling, name, recorded)
	if err == nil && wantsAlarms(recorded.Spec) {
		if err := withServingAlarms(ctx, e.Clients.CloudWatch(), ep); err != nil {
			return nil, err
		}
	}
	return ep, err
}

func readServing(ctx context.Context, api cloud.ServingAPI, as cloud.ServingScalingAPI, name string, recorded ServingEndpointPrior) (*ServingEndpoint, error) {
	ep, err := findServing(ctx, api, name)
	if errors.Is(err, cloud.ErrNotFound) {
		// Deleted outside: the config and model recorded for it serve
		// nothing now. They go when they carry this provider's token.
		dropRecordedServing(ctx, api, recorded)
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if err := withServingScaling(ctx, as, ep); err != nil {
		return nil, fmt.Errorf("reading autoscaling of endpoint %s: %w", name, err)
	}
	if recorded.ConfigName != "" && ep.ConfigName != recorded.ConfigName && ep.Status == cloud.EndpointInService {
		_, ep.Warnings = sweepServing(ctx, api, name, ep.CreationToken, ep.ConfigName, ep.ModelName)
	}
	return ep, nil
}

// sweepServing deletes the endpoint configs and models of endpoint name
// that this resource provably made (a generated name, and the endpoint's
// creation token in their tags) and that the endpoint does not serve
// (keepConfig, keepModel): what an update or delete cut off before its
// clean-up left behind. A config or model without the token, or with
// another, is never touched; nor is a model an endpoint config that stays
// still names. It returns what it deleted, and warnings for what it could
// not.
func sweepServing(ctx context.Context, api cloud.ServingAPI, name, token, keepConfig, keepModel string) (removed, warnings []string) {
	if token == "" {
		return nil, nil
	}
	prefix := servingNamePrefix(name)
	owned := func(arn string) (bool, error) {
		tags, err := cloud.ServingTags(ctx, api, arn)
		if errors.Is(err, cloud.ErrNotFound) {
			return false, nil
		}
		return err == nil && tags[ServingEndpointTokenTag] == token, err
	}
	configs, err := cloud.ListServingEndpointConfigs(ctx, api, prefix)
	if err != nil {
		return nil, []string{fmt.Sprintf("left-over endpoint configs of %s could not be looked for: %v", name, err)}
	}
	keptModels := []string{keepModel}
	for _, c := range configs {
		if c.Name == keepConfig || !isServingGenerated(prefix, c.Name) {
			continue
		}
		ours, err := owned(c.ARN)
		if err == nil && ours {
			err = cloud.DeleteServingEndpointConfig(ctx, api, c.Name)
			if err == nil {
				removed = append(removed, c.Name)
				continue
			}
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("endpoint config %s may be left over: %v", c.Name, err))
		}
		// It stays: so does the model it names.
		if info, err := cloud.FindServingEndpointConfig(ctx, api, c.Name); err == nil {
			for _, v := range info.Variants {
				keptModels = append(keptModels, v.ModelName)
			}
		} else if !errors.Is(err, cloud.ErrNotFound) {
			return removed, append(warnings, fmt.Sprintf("left-over models of %s were not looked for: %v", name, err))
		}
	}
	models, err := cloud.ListServingModels(ctx, api, prefix)
	if err != nil {
		return removed, append(warnings, fmt.Sprintf("left-over models of %s could not be looked for: %v", name, err))
	}
	for _, m := range models {
		if slices.Contains(keptModels, m.Name) || !isServingGenerated(prefix, m.Name) {
			continue
		}
		ours, err := owned(m.ARN)
		if err == nil && ours {
			if err = cloud.DeleteServingModel(ctx, api, m.Name); err == nil {
				removed = append(removed, m.Name)
				continue
			}
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("model %s may be left over: %v", m.Name, err))
		}
	}
	return removed, warnings
}

// dropRecordedServing deletes the endpoint config and model recorded for an
// endpoint that is gone, each only when it carries a creation token tag
// (this provider made it). Best effort: what fails stays, as a config or
// model nothing serves.
func dropRecordedServing(ctx context.Context, api cloud.ServingAPI, recorded ServingEndpointPrior) {
	if recorded.ConfigName != "" {
		if c, err := cloud.FindServingEndpointConfig(ctx, api, recorded.ConfigName); err == nil {
			if tags, err := cloud.ServingTags(ctx, api, c.ARN); err == nil && tags[ServingEndpointTokenTag] != "" {
				_ = cloud.DeleteServingEndpointConfig(ctx, api, recorded.ConfigName)
			}
		}
	}
	if recorded.ModelName != "" {
		if m, err := cloud.FindServingModel(ctx, api, recorded.ModelName); err == nil {
			if tags, err := cloud.ServingTags(ctx, api, m.ARN); err == nil && tags[ServingEndpointTokenTag] != "" {
				_ = cloud.DeleteServingModel(ctx, api, recorded.ModelName)
			}
		}
	}
}
