// Package platform holds the domain specs both front ends (Terraform and
// Pulumi) translate to, and the environment they run against: AWS clients,
// the residency policy and the instance catalog of one provider configuration.
package platform

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/mlplatform/mlplatform/internal/catalog"
	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// Config is the provider configuration, identical for Terraform and Pulumi.
type Config struct {
	Region      string            // empty: AWS_REGION, else the jurisdiction's first region
	Profile     string            // shared-config profile
	Endpoints   map[string]string // service key (ec2, s3, kms, sagemaker, ssm, sts) -> URL
	Residency   residency.PolicyConfig
	DefaultTags map[string]string
	// DefaultTagsUnknown is set when the default tags are not known yet (a
	// plan whose provider configuration depends on other resources): the
	// required-tag rule waits for apply.
	DefaultTagsUnknown bool
	// UnknownDefaultTags are default tag keys whose values are not known
	// yet: they count as present.
	UnknownDefaultTags []string
	UserAgent          string
	// Polling is how the waits poll; kinds left zero poll as for AWS
	// (DefaultPolling). Front ends set it from PollingFromEnv.
	Polling Polling
}

// UnknownValue stands in for a value not known yet where a check needs only
// to know that it is there.
const UnknownValue = "(known after apply)"

// Env is one configured provider: clients, policy and a lazily loaded catalog.
// It is safe for concurrent use.
type Env struct {
	Clients     *cloud.Clients
	Policy      *residency.Policy
	Locator     residency.Locator
	DefaultTags map[string]string
	// DefaultTagsUnknown and UnknownDefaultTags: see Config.
	DefaultTagsUnknown bool
	UnknownDefaultTags []string

	// TrustedCertificates (PEM) verify the identity documents of validated
	// nodes when a validation block names none.
	TrustedCertificates string

	// CatalogCache is where instance-catalog facts are kept between
	// provider processes; nil: not kept (MLPLATFORM_CATALOG_CACHE=off).
	CatalogCache *catalog.Cache

	// Polling is how every wait polls (nodes, SageMaker, Auto Scaling, the
	// validation gate); kinds left zero poll as DefaultPolling says.
	Polling Polling

	catalogMu  sync.Mutex
	catalogSrc *catalog.Source

	zonesMu sync.Mutex
	zones   []cloud.Zone
}

// Open validates cfg (residency first, then the region against it) and builds
// the environment. Configuration errors are *residency.ConfigError with the
// attribute path they concern.
func Open(ctx context.Context, cfg Config) (*Env, error) {
	if cfg.Residency.Jurisdiction == "" {
		cfg.Residency.Jurisdiction = "AE"
	}
	policy, err := residency.NewPolicy(cfg.Residency)
	if err != nil {
		return nil, err
	}
	region := cfg.Region
	for _, env := range []string{"AWS_REGION", "AWS_DEFAULT_REGION"} {
		if region == "" {
			region = os.Getenv(env)
		}
	}
	if region == "" {
		region = policy.AllowedRegions[0]
	}
	if !policy.RegionAllowed(region) {
		return nil, &residency.ConfigError{Path: "region", Msg: fmt.Sprintf("region %q is outside jurisdiction %s (%s); allowed regions: %s. Set region to one of them",
			region, policy.Jurisdiction.Code, policy.Jurisdiction.Name, strings.Join(policy.AllowedRegions, ", "))}
	}
	if err := checkEndpoints(policy, cfg.Endpoints); err != nil {
		return nil, err
	}
	cache, err := catalogCacheFromEnv()
	if err != nil {
		return nil, err
	}
	clients, err := cloud.New(ctx, cloud.Config{Region: region, Profile: cfg.Profile, Endpoints: cfg.Endpoints, UserAgent: cfg.UserAgent})
	if err != nil {
		return nil, err
	}
	return &Env{Clients: clients, Policy: policy, Locator: cloud.NewLocator(clients), DefaultTags: maps.Clone(cfg.DefaultTags),
		DefaultTagsUnknown: cfg.DefaultTagsUnknown, UnknownDefaultTags: cfg.UnknownDefaultTags, CatalogCache: cache, Polling: cfg.Polling.WithDefaults()}, nil
}

// Region is the region the environment provisions in.
func (e *Env) Region() string { return e.Clients.Region }

// MergeTags returns the default tags overlaid with a resource's own tags.
func (e *Env) MergeTags(tags map[string]string) map[string]string {
	out := maps.Clone(e.DefaultTags)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, tags)
	return out
}

// PlannedTagsAll is tags merged over the default tags as a plan shows them;
// nil while a tag (tagsKnown false) or a default tag is known only at apply,
// so a plan never shows a tags_all short of a key.
func (e *Env) PlannedTagsAll(tags map[string]string, tagsKnown bool) map[string]string {
	if !tagsKnown || e.DefaultTagsUnknown || len(e.UnknownDefaultTags) > 0 {
		return nil
	}
	return e.MergeTags(tags)
}

// CheckResidency runs the residency engine on refs, and the required-tag rule
// on the merged tags when tagsPath is not empty.
func (e *Env) CheckResidency(ctx context.Context, refs []residency.Ref, tags map[string]string, tagsPath string) ([]residency.Violation, error) {
	vs, err := e.Policy.Check(ctx, e.Locator, refs)
	if err != nil {
		return nil, err
	}
	if tagsPath != "" && !e.DefaultTagsUnknown {
		merged := e.MergeTags(tags)
		for _, k := range e.UnknownDefaultTags {
			if _, own := tags[k]; !own {
				merged[k] = UnknownValue // present; its value comes at apply
			}
		}
		vs = append(vs, e.Policy.CheckTags(tagsPath, merged)...)
	}
	return vs, nil
}

// checkEndpoints checks every endpoint override, from the configuration and
// from the standard AWS environment (AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_<SERVICE>), against the policy: an AWS host naming a
// region outside the jurisdiction is a configuration error. Signing stays
// with the provider's region whatever the endpoint.
func checkEndpoints(policy *residency.Policy, endpoints map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(endpoints)) {
		if err := policy.CheckEndpoint("endpoints."+k, endpoints[k]); err != nil {
			return err
		}
	}
	vars := []string{"AWS_ENDPOINT_URL"}
	for _, s := range cloud.Services() {
		vars = append(vars, "AWS_ENDPOINT_URL_"+strings.ToUpper(s))
	}
	for _, v := range vars {
		if err := policy.CheckEndpoint(v, os.Getenv(v)); err != nil {
			// Not an attribute of the configuration: a plain error.
			return fmt.Errorf("environment variable %w", err)
		}
	}
	return nil
}
