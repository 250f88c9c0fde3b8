// Package platform holds the domain specs both front ends (Terraform and
// Pulumi) translate to, and the environment they run against: AWS clients,
// the residency policy and the instance catalog of one provider configuration.
package platform

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"

	"github.com/mlplatform/mlplatform/internal/catalog"
	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// AssumeRole is the role the provider works as (assume_role): its ARN,
// session name (default DefaultRoleSessionName) and external ID.
type AssumeRole = cloud.AssumeRole

// DefaultRoleSessionName names the assumed role's sessions by default.
const DefaultRoleSessionName = cloud.DefaultRoleSessionName

// Config is the provider configuration, identical for Terraform and Pulumi.
type Config struct {
	Region  string // empty: AWS_REGION, else the jurisdiction's first region
	Profile string // shared-config profile
	// AssumeRole, when its RoleARN is set, is the role every call is made
	// as (assume_role).
	AssumeRole AssumeRole
	Endpoints  map[string]string // service key (ec2, s3, kms, sagemaker, ssm, sts) -> URL
	// AllowCustomEndpoints lets endpoints that are not AWS's own (an
	// emulator or proxy on another host) through, with a warning. Loopback
	// hosts need no switch.
	AllowCustomEndpoints bool
	Residency            residency.PolicyConfig
	DefaultTags          map[string]string
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

	// Warnings are what the front ends show once about the configuration
	// (custom endpoints let through by allow_custom_endpoints, customer
	// managed keys not required where the jurisdiction requires them).
	Warnings []ConfigWarning

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
	cache, err := catalogCacheFromEnv()
	if err != nil {
		return nil, err
	}
	clients, err := cloud.New(ctx, cloud.Config{Region: region, Profile: cfg.Profile, AssumeRole: cfg.AssumeRole, Endpoints: cfg.Endpoints, UserAgent: cfg.UserAgent})
	if err != nil {
		return nil, err
	}
	warnings, err := checkEndpoints(policy, clients, cfg)
	if err != nil {
		return nil, err
	}
	if w, ok := customerManagedKeysOptOut(policy); ok {
		warnings = append(warnings, w)
	}
	return &Env{Warnings: warnings, Clients: clients, Policy: policy, Locator: cloud.NewLocator(clients), DefaultTags: maps.Clone(cfg.DefaultTags),
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

// ConfigWarning is a warning about the provider configuration, at the
// attribute Path.
type ConfigWarning struct {
	Path    string
	Summary string
	Detail  string
}

// customerManagedKeysOptOut is the warning of a configuration that turned
// off the customer managed keys its jurisdiction requires by default.
func customerManagedKeysOptOut(p *residency.Policy) (ConfigWarning, bool) {
	if !p.CustomerManagedKeysOptOut {
		return ConfigWarning{}, false
	}
	return ConfigWarning{
		Path:    residency.RequireCustomerManagedKeysAttr,
		Summary: "Customer managed keys not required",
		Detail: fmt.Sprintf("Jurisdiction %s (%s) requires customer managed KMS keys by default; %s turns that off, "+
			"so data may be encrypted with AWS managed keys (a key attribute left unset means the AWS managed default key). "+
			"Remove the setting to require a customer managed key (aws_kms_key in %s) on every resource that stores data.",
			p.Jurisdiction.Code, p.Jurisdiction.Name, residency.CustomerManagedKeysOptOut, p.AllowedRegions[0]),
	}, true
}

// AllowCustomEndpointsAttr is the provider attribute that lets custom
// endpoints through.
const AllowCustomEndpointsAttr = "allow_custom_endpoints"

// checkEndpoints checks the endpoint every client resolved, wherever it came
// from (the endpoints block, AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL,
// the shared config's endpoint_url or its services section):
//   - against the policy: an AWS host naming a region outside the
//     jurisdiction is a configuration error;
//   - plain http only to a loopback host: signed requests and the data they
//     carry never cross a network unencrypted;
//   - a host that is neither the service's AWS endpoint nor loopback (an
//     emulator or proxy elsewhere, whose location the URL does not tell)
//     only with allow_custom_endpoints, and then with a warning.
//
// Signing stays with the provider's region whatever the endpoint.
func checkEndpoints(policy *residency.Policy, clients *cloud.Clients, cfg Config) ([]ConfigWarning, error) {
	var custom []string
	for _, resolved := range clients.ResolvedEndpoints() {
		src := endpointSource(resolved.Service, cfg)
		ep, err := residency.ParseEndpoint(resolved.URL)
		if err != nil {
			return nil, src.err(&residency.ConfigError{Path: src.path, Msg: err.Error()})
		}
		prefix := cloud.EndpointHostPrefix(resolved.Service)
		aws := "https://" + prefix + "." + policy.AllowedRegions[0] + ".amazonaws.com"
		isAWS := ep.ServiceHost(prefix)
		switch {
		case ep.Scheme == "http" && !ep.Loopback:
			return nil, src.err(&residency.ConfigError{Path: src.path, Msg: fmt.Sprintf(
				"endpoint %q uses plain http: signed requests and the data they carry would cross the network unencrypted. Use https (e.g. %s); plain http is allowed only to a loopback host (127.0.0.0/8, ::1, localhost), such as an emulator on this machine",
				resolved.URL, aws)})
		case !isAWS && !ep.Loopback && !cfg.AllowCustomEndpoints:
			return nil, src.err(&residency.ConfigError{Path: src.path, Msg: fmt.Sprintf(
				"endpoint %q is not an AWS endpoint of %s (%s, its -fips and dualstack forms, or an interface VPC endpoint vpce-ID.%s.%s.vpce.amazonaws.com): where it sends requests, credentials' signatures and data cannot be told or checked against jurisdiction %s. "+
					"Use %s or a VPC endpoint; for an emulator or proxy you run, set %s = true in the provider configuration",
				resolved.URL, resolved.Service, aws, prefix, policy.AllowedRegions[0], policy.Jurisdiction.Code, aws, AllowCustomEndpointsAttr)})
		}
		if err := policy.CheckEndpoint(src.path, resolved.URL); err != nil {
			return nil, src.err(err)
		}
		if !isAWS && !ep.Loopback {
			custom = append(custom, fmt.Sprintf("%s = %s (%s)", resolved.Service, resolved.URL, src.what))
		}
	}
	if len(custom) == 0 {
		return nil, nil
	}
	return []ConfigWarning{{Path: AllowCustomEndpointsAttr, Summary: "Custom AWS endpoints",
		Detail: fmt.Sprintf("%s is set: these endpoints are not AWS's own, and residency cannot be checked for what they do with requests and data: %s. Remove them (or the setting) outside emulators and proxies you run.",
			AllowCustomEndpointsAttr, strings.Join(custom, "; "))}}, nil
}

// endpointOrigin is where a resolved endpoint came from: an attribute of
// the configuration (path) or a setting outside it (what).
type endpointOrigin struct {
	path string // endpoints.KEY, or "" outside the configuration
	what string // e.g. environment variable AWS_ENDPOINT_URL_AUTO_SCALING
}

// err turns a check's configuration error into the error for the origin:
// a configuration error at the attribute, else a plain error naming the
// setting.
func (o endpointOrigin) err(err error) error {
	var ce *residency.ConfigError
	if o.path != "" || !errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("%s: %s", o.what, ce.Msg)
}

// endpointSource tells where the SDK took the endpoint of service key from,
// in the SDK's order: the endpoints block, the service's environment
// variable, AWS_ENDPOINT_URL, then the shared config file.
func endpointSource(key string, cfg Config) endpointOrigin {
	if cfg.Endpoints[key] != "" {
		return endpointOrigin{path: "endpoints." + key, what: "endpoints." + key}
	}
	for _, v := range []string{cloud.EndpointEnvVar(key), cloud.GlobalEndpointEnv} {
		if os.Getenv(v) != "" {
			return endpointOrigin{what: "environment variable " + v}
		}
	}
	profile := cfg.Profile
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE"} {
		if profile == "" {
			profile = os.Getenv(v)
		}
	}
	if profile == "" {
		profile = "default"
	}
	return endpointOrigin{what: fmt.Sprintf("endpoint_url of the shared AWS config (profile %s or its services section) for %s", profile, key)}
}

// EndpointEnvVar is the environment variable the AWS SDK reads for the
// endpoint of the service with endpoint key key (AWS_ENDPOINT_URL_AUTO_SCALING
// for autoscaling), for the front ends' documentation.
func EndpointEnvVar(key string) string { return cloud.EndpointEnvVar(key) }
