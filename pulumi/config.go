package pulumi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// Config is the provider configuration: the same settings as the Terraform
// provider block, translated to platform.Config the same way.
type Config struct {
	Region  *string `pulumi:"region,optional"`
	Profile *string `pulumi:"profile,optional"`
	// AssumeRole is the role every call is made as.
	AssumeRole *AssumeRoleConfig `pulumi:"assumeRole,optional"`
	Endpoints  *Endpoints        `pulumi:"endpoints,optional"`
	// AllowCustomEndpoints lets endpoints that are not AWS's own through.
	AllowCustomEndpoints *bool             `pulumi:"allowCustomEndpoints,optional"`
	Residency            *ResidencyConfig  `pulumi:"residency,optional"`
	DefaultTags          map[string]string `pulumi:"defaultTags,optional"`

	// env is the opened environment, set once by Configure.
	env *platform.Env
}

// Endpoints are per-service endpoint overrides: emulators, VPC endpoints.
type Endpoints struct {
	EC2            *string `pulumi:"ec2,optional"`
	S3             *string `pulumi:"s3,optional"`
	KMS            *string `pulumi:"kms,optional"`
	SageMaker      *string `pulumi:"sagemaker,optional"`
	SSM            *string `pulumi:"ssm,optional"`
	STS            *string `pulumi:"sts,optional"`
	AutoScaling    *string `pulumi:"autoscaling,optional"`
	AppAutoScaling *string `pulumi:"applicationautoscaling,optional"`
	CloudWatch     *string `pulumi:"cloudwatch,optional"`
	SecretsManager *string `pulumi:"secretsmanager,optional"`
	EKS            *string `pulumi:"eks,optional"`
	IAM            *string `pulumi:"iam,optional"`
}

// AssumeRoleConfig is the role the provider works as.
type AssumeRoleConfig struct {
	RoleARN     string  `pulumi:"roleArn"`
	SessionName *string `pulumi:"sessionName,optional"`
	ExternalID  *string `pulumi:"externalId,optional"`
}

// Annotate describes the settings.
func (r *AssumeRoleConfig) Annotate(a infer.Annotator) {
	a.Describe(&r.RoleARN, "ARN of the role.")
	a.Describe(&r.SessionName, "Session name (CloudTrail shows it). Default "+platform.DefaultRoleSessionName+".")
	a.Describe(&r.ExternalID, "External ID the role's trust policy requires, if any.")
}

// ResidencyConfig is the data-residency policy every resource is checked
// against in Check and Diff, before any write.
type ResidencyConfig struct {
	Jurisdiction               *string  `pulumi:"jurisdiction,optional"`
	AllowedRegions             []string `pulumi:"allowedRegions,optional"`
	ExcludedZoneIDs            []string `pulumi:"excludedZoneIds,optional"`
	RequireCustomerManagedKeys *bool    `pulumi:"requireCustomerManagedKeys,optional"`
	RequiredTags               []string `pulumi:"requiredTags,optional"`
	Mode                       *string  `pulumi:"mode,optional"`
}

var (
	_ infer.CustomConfigure      = (*Config)(nil)
	_ infer.CustomCheck[*Config] = (*Config)(nil)
	_ infer.Annotated            = (*Config)(nil)
)

// Annotate describes the configuration in the schema.
func (c *Config) Annotate(a infer.Annotator) {
	a.Describe(c, "The mlplatform provider declares and provisions an AI/ML platform on AWS under data-residency rules. "+
		"Residency is enforced in Check and Diff: a preview that would place data, keys, images or compute outside the jurisdiction fails before anything is created.")
	a.Describe(&c.Region, "AWS region to provision in. Defaults to `AWS_REGION`, else the first region of the jurisdiction (`me-central-1` for `AE`). Must lie inside the jurisdiction.")
	a.Describe(&c.Profile, "Named profile of the shared AWS configuration. The standard credential chain applies otherwise.")
	a.Describe(&c.AssumeRole, "A role to work as: every call is made with credentials from STS AssumeRole, made from the credential chain's (or profile's) and refreshed before they expire. The gate's calls to an EKS cluster's API (orchestrator eks) are made as this role too.")
	a.Describe(&c.Endpoints, "Per-service endpoint overrides: emulators, VPC endpoints. `AWS_ENDPOINT_URL` and `AWS_ENDPOINT_URL_<SERVICE>` apply otherwise.")
	a.Describe(&c.AllowCustomEndpoints, "Allow endpoints that are not AWS's own: an emulator or a proxy on another host, for tests and proxies you run. "+
		"Default `false`: every endpoint (from `endpoints`, `AWS_ENDPOINT_URL_<SERVICE>`, `AWS_ENDPOINT_URL` or the shared config's `endpoint_url`) must be the service's AWS endpoint "+
		"(`SERVICE.REGION.amazonaws.com`, `amazonaws.com.cn` or `api.aws`, its FIPS and dual-stack forms, or an interface VPC endpoint), or a loopback host (127.0.0.0/8, `::1`, `localhost`). "+
		"When set, the provider warns and names each custom endpoint: residency cannot be checked for where they send requests and data. "+
		"Plain `http://` is refused whatever this says, except to a loopback host.")
	a.Describe(&c.Residency, "The data-residency policy every resource is checked against before any write.")
	a.Describe(&c.DefaultTags, "Tags added to every resource the provider creates. Resource tags win on conflict.")
}

// Annotate describes the endpoint overrides.
func (e *Endpoints) Annotate(a infer.Annotator) {
	a.Describe(e, "Per-service endpoint overrides.")
	for _, f := range []struct {
		field *(*string)
		svc   string
	}{{&e.EC2, "EC2"}, {&e.S3, "S3"}, {&e.KMS, "KMS"}, {&e.SageMaker, "SageMaker"}, {&e.SSM, "SSM"}, {&e.STS, "STS"}, {&e.AutoScaling, "EC2 Auto Scaling"}, {&e.AppAutoScaling, "Application Auto Scaling"}, {&e.CloudWatch, "CloudWatch (the serving endpoint's standard alarms)"}, {&e.SecretsManager, "Secrets Manager (the Slurm munge key's secret)"}, {&e.EKS, "EKS (orchestrator.eks: the cluster and the nodes' access entry)"}, {&e.IAM, "IAM (orchestrator.eks: the instance profile's role)"}} {
		a.Describe(f.field, fmt.Sprintf("URL of the %s endpoint.", f.svc))
	}
}

// Annotate describes the residency policy settings.
func (r *ResidencyConfig) Annotate(a infer.Annotator) {
	a.Describe(r, "The data-residency policy.")
	a.Describe(&r.Jurisdiction, "Jurisdiction code (ISO 3166-1 alpha-2). Defaults to `AE` (United Arab Emirates, `me-central-1`).")
	a.Describe(&r.AllowedRegions, "Narrow the jurisdiction's regions to these. Each must lie inside the jurisdiction.")
	a.Describe(&r.ExcludedZoneIDs, "Availability zone ids never to use, e.g. `[\"mec1-az2\"]`.")
	a.Describe(&r.RequireCustomerManagedKeys, "Require every KMS key that encrypts data to be customer-managed: a key property left unset (the AWS managed default key) or naming an AWS managed key is a residency violation. "+
		"Defaults to the jurisdiction's rule: `true` for `AE`. Set `false` to accept AWS managed keys; the provider then warns that the jurisdiction's default is off.")
	a.Describe(&r.RequiredTags, "Tag keys every resource must carry (after `defaultTags` are merged).")
	a.Describe(&r.Mode, "`enforce` (default): violations fail Check, so `pulumi preview` fails and nothing is created. `audit`: violations are warnings.")
}

// Check validates the configuration with the same core call Configure makes,
// so a bad residency block fails preview on its property.
func (*Config) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[*Config], error) {
	c, failures, err := infer.DefaultCheck[*Config](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 || c == nil {
		return infer.CheckResponse[*Config]{Inputs: c, Failures: failures}, err
	}
	pc, err := c.platformConfig(ctx)
	if err != nil {
		return infer.CheckResponse[*Config]{Inputs: c}, fmt.Errorf("configuring the mlplatform provider: %w", err)
	}
	if _, err := platform.Open(ctx, pc); err != nil {
		var ce *residency.ConfigError
		if errors.As(err, &ce) {
			failures = append(failures, p.CheckFailure{Property: propertyPath(ce.Path), Reason: configText(ce.Msg)})
			return infer.CheckResponse[*Config]{Inputs: c, Failures: failures}, nil
		}
		return infer.CheckResponse[*Config]{Inputs: c}, fmt.Errorf("configuring the mlplatform provider: %s", configText(err.Error()))
	}
	return infer.CheckResponse[*Config]{Inputs: c}, nil
}

// Configure opens the platform environment once per provider process.
func (c *Config) Configure(ctx context.Context) error {
	pc, err := c.platformConfig(ctx)
	if err != nil {
		return fmt.Errorf("configuring the mlplatform provider: %w", err)
	}
	env, err := platform.Open(ctx, pc)
	if err != nil {
		var ce *residency.ConfigError
		if errors.As(err, &ce) {
			return fmt.Errorf("invalid provider configuration: %s: %s", propertyPath(ce.Path), configText(ce.Msg))
		}
		return fmt.Errorf("configuring the mlplatform provider: %s", configText(err.Error()))
	}
	for _, w := range env.Warnings {
		p.GetLogger(ctx).Warning(w.Summary + ": " + configText(w.Detail))
	}
	c.env = env
	return nil
}

// platformConfig translates the configuration (and the environment's
// polling) exactly as the Terraform provider's newMeta does.
func (c *Config) platformConfig(ctx context.Context) (platform.Config, error) {
	polling, err := platform.PollingFromEnv(os.Getenv)
	if err != nil {
		return platform.Config{}, err
	}
	pc := platform.Config{
		Region:    deref(c.Region),
		Profile:   deref(c.Profile),
		Endpoints: map[string]string{},
		UserAgent: "mlplatform-pulumi_" + p.GetRunInfo(ctx).Version,
		Polling:   polling,

		AllowCustomEndpoints: deref(c.AllowCustomEndpoints),
	}
	if r := c.AssumeRole; r != nil {
		pc.AssumeRole = platform.AssumeRole{RoleARN: r.RoleARN, SessionName: deref(r.SessionName), ExternalID: deref(r.ExternalID)}
	}
	if r := c.Residency; r != nil {
		pc.Residency = residency.PolicyConfig{
			Jurisdiction:               deref(r.Jurisdiction),
			AllowedRegions:             r.AllowedRegions,
			ExcludedZoneIDs:            r.ExcludedZoneIDs,
			RequireCustomerManagedKeys: r.RequireCustomerManagedKeys, // nil: the jurisdiction's default
			RequiredTags:               r.RequiredTags,
			Mode:                       residency.Mode(deref(r.Mode)),
		}
	}
	if e := c.Endpoints; e != nil {
		for k, v := range map[string]*string{"ec2": e.EC2, "s3": e.S3, "kms": e.KMS, "sagemaker": e.SageMaker, "ssm": e.SSM, "sts": e.STS, "autoscaling": e.AutoScaling, "applicationautoscaling": e.AppAutoScaling, "cloudwatch": e.CloudWatch, "secretsmanager": e.SecretsManager, "eks": e.EKS, "iam": e.IAM} {
			if s := deref(v); s != "" {
				pc.Endpoints[k] = s
			}
		}
	}
	if len(c.DefaultTags) > 0 {
		pc.DefaultTags = c.DefaultTags
	}
	return pc, nil
}

// configText turns the core's configuration messages, which name the
// Terraform attributes, into the Pulumi spelling.
func configText(s string) string {
	return strings.NewReplacer(
		platform.AllowCustomEndpointsAttr, propertyPath(platform.AllowCustomEndpointsAttr),
		residency.RequireCustomerManagedKeysAttr, propertyPath(residency.RequireCustomerManagedKeysAttr),
	).Replace(s)
}

// envFrom returns the environment of the configured provider.
func envFrom(ctx context.Context) (*platform.Env, error) {
	c := infer.GetConfig[Config](ctx)
	if c.env == nil {
		return nil, errors.New("the mlplatform provider is not configured")
	}
	return c.env, nil
}

func deref[T any](v *T) T {
	var zero T
	if v == nil {
		return zero
	}
	return *v
}

func ptr[T any](v T) *T { return &v }

var _ infer.CustomDiff[*Config, *Config] = (*Config)(nil)

// Diff decides what a change of the provider configuration does. Pulumi
// replaces every resource of a replaced provider, so only a change of region
// replaces it (the resources live in the old region); residency, tags,
// profile, endpoints and allowCustomEndpoints change in place, and each resource's own Diff then
// says what that means for it, as a Terraform plan does.
func (c *Config) Diff(_ context.Context, req infer.DiffRequest[*Config, *Config]) (infer.DiffResponse, error) {
	olds, news := req.State, req.Inputs
	if olds == nil {
		olds = &Config{}
	}
	if news == nil {
		news = &Config{}
	}
	diff := map[string]p.PropertyDiff{}
	if deref(olds.Region) != deref(news.Region) {
		diff["region"] = p.PropertyDiff{Kind: p.UpdateReplace, InputDiff: true}
	}
	if deref(olds.Profile) != deref(news.Profile) {
		diff["profile"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	if !reflect.DeepEqual(olds.AssumeRole, news.AssumeRole) {
		diff["assumeRole"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	if !reflect.DeepEqual(olds.Endpoints, news.Endpoints) {
		diff["endpoints"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	if deref(olds.AllowCustomEndpoints) != deref(news.AllowCustomEndpoints) {
		diff["allowCustomEndpoints"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	if !reflect.DeepEqual(olds.Residency, news.Residency) {
		diff["residency"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	if !maps.Equal(olds.DefaultTags, news.DefaultTags) {
		diff["defaultTags"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	return infer.DiffResponse{HasChanges: len(diff) > 0, DetailedDiff: diff}, nil
}
