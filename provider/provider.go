// Package provider is the terraform-plugin-framework adapter of mlplatform:
// it translates schema to the domain specs in internal/ and errors to
// diagnostics. Validation, residency, AWS calls and waiting live in internal/.
package provider

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

var _ provider.Provider = &mlplatformProvider{}

// New returns the provider factory for a version.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return newProvider(version) }
}

func newProvider(version string) *mlplatformProvider {
	return &mlplatformProvider{version: version, instanceTypes: newInstanceTypesMemo()}
}

type mlplatformProvider struct {
	version string
	// instanceTypes is shared by the instance types data sources of the
	// process (one provider configuration).
	instanceTypes *instanceTypesMemo
	// meta is the configured environment, once Configure has run.
	meta atomic.Pointer[Meta]
}

type providerModel struct {
	Region  types.String `tfsdk:"region"`
	Profile types.String `tfsdk:"profile"`
	// AssumeRole is the role every call is made as.
	AssumeRole *assumeRoleModel `tfsdk:"assume_role"`
	Endpoints  *endpointsModel  `tfsdk:"endpoints"`
	// AllowCustomEndpoints lets endpoints that are not AWS's own through.
	AllowCustomEndpoints types.Bool      `tfsdk:"allow_custom_endpoints"`
	Residency            *residencyModel `tfsdk:"residency"`
	DefaultTags          types.Map       `tfsdk:"default_tags"`
}

type assumeRoleModel struct {
	RoleARN     types.String `tfsdk:"role_arn"`
	SessionName types.String `tfsdk:"session_name"`
	ExternalID  types.String `tfsdk:"external_id"`
}

type endpointsModel struct {
	EC2            types.String `tfsdk:"ec2"`
	S3             types.String `tfsdk:"s3"`
	KMS            types.String `tfsdk:"kms"`
	SageMaker      types.String `tfsdk:"sagemaker"`
	SSM            types.String `tfsdk:"ssm"`
	STS            types.String `tfsdk:"sts"`
	AutoScaling    types.String `tfsdk:"autoscaling"`
	AppAutoScaling types.String `tfsdk:"applicationautoscaling"`
	CloudWatch     types.String `tfsdk:"cloudwatch"`
	SecretsManager types.String `tfsdk:"secretsmanager"`
	EKS            types.String `tfsdk:"eks"`
	IAM            types.String `tfsdk:"iam"`
}

type residencyModel struct {
	Jurisdiction               types.String `tfsdk:"jurisdiction"`
	AllowedRegions             types.List   `tfsdk:"allowed_regions"`
	ExcludedZoneIDs            types.List   `tfsdk:"excluded_zone_ids"`
	RequireCustomerManagedKeys types.Bool   `tfsdk:"require_customer_managed_keys"`
	RequiredTags               types.List   `tfsdk:"required_tags"`
	Mode                       types.String `tfsdk:"mode"`
}

func (p *mlplatformProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "mlplatform"
	resp.Version = p.version
}

func (p *mlplatformProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	endpointAttr := func(svc string) schema.StringAttribute {
		return schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: fmt.Sprintf("URL of the %s endpoint. Overrides `%s`, `AWS_ENDPOINT_URL` and the shared config's `endpoint_url`.", svc, platform.EndpointEnvVar(svc)),
		}
	}
	var codes []string
	for _, j := range residency.Jurisdictions() {
		codes = append(codes, j.Code)
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The mlplatform provider declares, provisions and proves an AI/ML platform on AWS under data-residency rules. " +
			"Residency is enforced at plan time: a plan that would place data, keys, images or compute outside the jurisdiction fails before anything is created.\n\n" +
			"The standard AWS environment applies (the credential chain, `AWS_REGION`, `AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_<SERVICE>`). " +
			"`" + platform.PollIntervalEnv + "` (a duration such as `200ms`) makes every wait (nodes, SageMaker, Auto Scaling, the validation gate) poll at that interval " +
			"instead of the intervals meant for AWS (2 to 30 seconds): for emulators and tests. Unset, the waits poll as for AWS; a value that is not a positive duration fails the provider's configuration.",
		Attributes: map[string]schema.Attribute{
			"region": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "AWS region to provision in. Defaults to `AWS_REGION`, else the first region of the jurisdiction (`me-central-1` for `AE`). Must lie inside the jurisdiction.",
			},
			"profile": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Named profile of the shared AWS configuration. The standard credential chain applies otherwise.",
			},
			"assume_role": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "A role to work as: every call is made with credentials from STS `AssumeRole`, made from the credential chain's (or `profile`'s) and refreshed before they expire. " +
					"The gate's calls to an EKS cluster's API (`orchestrator.eks`) are made as this role too: give it an access entry there.",
				Attributes: map[string]schema.Attribute{
					"role_arn":     schema.StringAttribute{Required: true, MarkdownDescription: "ARN of the role."},
					"session_name": schema.StringAttribute{Optional: true, MarkdownDescription: "Session name (CloudTrail shows it). Default `" + platform.DefaultRoleSessionName + "`."},
					"external_id":  schema.StringAttribute{Optional: true, MarkdownDescription: "External ID the role's trust policy requires, if any."},
				},
			},
			platform.AllowCustomEndpointsAttr: schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Allow endpoints that are not AWS's own: an emulator or a proxy on another host, for tests and proxies you run. " +
					"Default `false`: every endpoint (from `endpoints`, `AWS_ENDPOINT_URL_<SERVICE>`, `AWS_ENDPOINT_URL` or the shared config's `endpoint_url`) must be the service's AWS endpoint " +
					"(`SERVICE.REGION.amazonaws.com`, `amazonaws.com.cn` or `api.aws`, its FIPS and dual-stack forms, or an interface VPC endpoint), or a loopback host (127.0.0.0/8, `::1`, `localhost`). " +
					"When set, the provider warns and names each custom endpoint: residency cannot be checked for where they send requests and data. " +
					"Plain `http://` is refused whatever this says, except to a loopback host.",
			},
			"default_tags": schema.MapAttribute{
				ElementType:         types.StringType,
				Optional:            true,
				MarkdownDescription: "Tags added to every resource the provider creates. Resource tags win on conflict.",
			},
		},
		Blocks: map[string]schema.Block{
			"endpoints": schema.SingleNestedBlock{
				MarkdownDescription: "Per-service endpoint overrides: VPC endpoints, emulators. Each must be the service's AWS endpoint in the jurisdiction or a loopback host, over https (plain http only to loopback); other hosts need `allow_custom_endpoints`.",
				Attributes: map[string]schema.Attribute{
					"ec2": endpointAttr("ec2"), "s3": endpointAttr("s3"), "kms": endpointAttr("kms"),
					"sagemaker": endpointAttr("sagemaker"), "ssm": endpointAttr("ssm"), "sts": endpointAttr("sts"),
					"autoscaling": endpointAttr("autoscaling"), "applicationautoscaling": endpointAttr("applicationautoscaling"),
					"cloudwatch": endpointAttr("cloudwatch"), "secretsmanager": endpointAttr("secretsmanager"),
					"eks": endpointAttr("eks"), "iam": endpointAttr("iam"),
				},
			},
			"residency": schema.SingleNestedBlock{
				MarkdownDescription: "The data-residency policy every resource is checked against at plan time.",
				Attributes: map[string]schema.Attribute{
					"jurisdiction": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: fmt.Sprintf("Jurisdiction code (ISO 3166-1 alpha-2). Built in: %s. Defaults to `AE` (United Arab Emirates, `me-central-1`).", strings.Join(codes, ", ")),
					},
					"allowed_regions": schema.ListAttribute{
						ElementType:         types.StringType,
						Optional:            true,
						MarkdownDescription: "Narrow the jurisdiction's regions to these. Each must lie inside the jurisdiction.",
					},
					"excluded_zone_ids": schema.ListAttribute{
						ElementType:         types.StringType,
						Optional:            true,
						MarkdownDescription: "Availability zone ids never to use, e.g. `[\"mec1-az2\"]`.",
					},
					"require_customer_managed_keys": schema.BoolAttribute{
						Optional: true,
						MarkdownDescription: "Require every KMS key that encrypts data to be customer-managed: a key attribute left unset (the AWS managed default key) or naming an AWS managed key is a residency violation. " +
							"Defaults to the jurisdiction's rule: `true` for `AE`. Set `false` to accept AWS managed keys; the plan then warns that the jurisdiction's default is off.",
					},
					"required_tags": schema.ListAttribute{
						ElementType:         types.StringType,
						Optional:            true,
						MarkdownDescription: "Tag keys every resource must carry (after `default_tags` are merged).",
					},
					"mode": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "`enforce` (default): violations are errors and nothing is created. `audit`: violations are warnings.",
						Validators:          []validator.String{stringvalidator.OneOf(string(residency.ModeEnforce), string(residency.ModeAudit))},
					},
				},
			},
		},
	}
}

func (p *mlplatformProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	meta, err := newMeta(ctx, cfg, p.version)
	if err != nil {
		addConfigError(&resp.Diagnostics, err)
		return
	}
	for _, w := range meta.Warnings {
		resp.Diagnostics.AddAttributeWarning(parsePath(w.Path), w.Summary, w.Detail)
	}
	p.meta.Store(meta)
	resp.ResourceData = meta
	resp.DataSourceData = meta
}

func (p *mlplatformProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewResidencyGuardResource,
		NewGPUClusterResource,
		NewFeatureStoreResource,
		NewCPUFootprintResource,
		NewServingEndpointResource,
	}
}

func (p *mlplatformProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		func() datasource.DataSource { return &instanceTypesDataSource{memo: p.instanceTypes} },
		NewResidencyDataSource,
		NewValidationReportsDataSource,
	}
}

// newMeta turns the provider block (and the environment's polling) into
// the core's configuration.
func newMeta(ctx context.Context, cfg providerModel, version string) (*Meta, error) {
	polling, err := platform.PollingFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	pc := platform.Config{Region: cfg.Region.ValueString(), Profile: cfg.Profile.ValueString(), Endpoints: map[string]string{}, UserAgent: "mlplatform-terraform_" + version, Polling: polling,
		AllowCustomEndpoints: cfg.AllowCustomEndpoints.ValueBool()}
	if r := cfg.AssumeRole; r != nil {
		pc.AssumeRole = platform.AssumeRole{RoleARN: r.RoleARN.ValueString(), SessionName: r.SessionName.ValueString(), ExternalID: r.ExternalID.ValueString()}
	}
	if r := cfg.Residency; r != nil {
		pc.Residency = residency.PolicyConfig{
			Jurisdiction:               r.Jurisdiction.ValueString(),
			AllowedRegions:             stringList(ctx, r.AllowedRegions),
			ExcludedZoneIDs:            stringList(ctx, r.ExcludedZoneIDs),
			RequireCustomerManagedKeys: customerManagedKeys(r.RequireCustomerManagedKeys),
			RequiredTags:               stringList(ctx, r.RequiredTags),
			Mode:                       residency.Mode(r.Mode.ValueString()),
		}
	}
	if e := cfg.Endpoints; e != nil {
		for k, v := range map[string]types.String{"ec2": e.EC2, "s3": e.S3, "kms": e.KMS, "sagemaker": e.SageMaker, "ssm": e.SSM, "sts": e.STS, "autoscaling": e.AutoScaling, "applicationautoscaling": e.AppAutoScaling, "cloudwatch": e.CloudWatch, "secretsmanager": e.SecretsManager, "eks": e.EKS, "iam": e.IAM} {
			if s := v.ValueString(); s != "" {
				pc.Endpoints[k] = s
			}
		}
	}
	switch {
	case cfg.DefaultTags.IsUnknown():
		pc.DefaultTagsUnknown = true
	case !cfg.DefaultTags.IsNull():
		// Values unknown at plan are present: the required-tag rule counts
		// them, and apply (with every value known) checks again.
		pc.DefaultTags = map[string]string{}
		for k, v := range cfg.DefaultTags.Elements() {
			if s, ok := v.(types.String); ok && !s.IsUnknown() {
				pc.DefaultTags[k] = s.ValueString()
			} else {
				pc.UnknownDefaultTags = append(pc.UnknownDefaultTags, k)
			}
		}
	}
	return platform.Open(ctx, pc)
}

// customerManagedKeys is require_customer_managed_keys as written: nil when
// unset (the jurisdiction's default). A value known only at apply is not
// required at plan; the apply, configured with the value, checks again
// before anything is written.
func customerManagedKeys(v types.Bool) *bool {
	switch {
	case v.IsNull():
		return nil
	case v.IsUnknown():
		return new(bool)
	}
	b := v.ValueBool()
	return &b
}

func stringList(ctx context.Context, l types.List) []string {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var out []string
	l.ElementsAs(ctx, &out, false)
	return out
}

// sdkLogEnv are the variables that ask for provider or SDK logs: Terraform's
// own (TF_LOG, TF_LOG_PROVIDER) and the SDK's (terraform-plugin-log).
var sdkLogEnv = []string{"TF_LOG", "TF_LOG_PROVIDER", "TF_LOG_PROVIDER_MLPLATFORM", "TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK"}

// QuietSDKLogs sets TF_LOG_SDK=OFF when none of the logging variables is
// set. terraform-plugin-go and the framework otherwise write every trace
// line (about 50 for each request, several MB for a plan of 100 data
// sources) as JSON to stderr, where Terraform parses and discards them
// because it collects no provider logs. With any of them set, nothing
// changes. The provider's own log lines are kept.
func QuietSDKLogs(getenv func(string) string, setenv func(key, value string) error) error {
	for _, k := range sdkLogEnv {
		if getenv(k) != "" {
			return nil
		}
	}
	return setenv("TF_LOG_SDK", "OFF")
}
