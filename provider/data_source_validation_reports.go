package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/platform"
)

var _ datasource.DataSourceWithConfigure = &validationReportsDataSource{}

// NewValidationReportsDataSource is the mlplatform_validation_reports
// constructor.
func NewValidationReportsDataSource() datasource.DataSource { return &validationReportsDataSource{} }

type validationReportsDataSource struct {
	meta *Meta
}

type validationReportsModel struct {
	ID                  types.String       `tfsdk:"id"`
	Name                types.String       `tfsdk:"name"`
	ReportsS3URI        types.String       `tfsdk:"reports_s3_uri"`
	TrustedCertificates types.String       `tfsdk:"trusted_certificates"`
	Profile             types.String       `tfsdk:"profile"`
	MaxAge              types.String       `tfsdk:"max_age"`
	Reports             []validationReport `tfsdk:"reports"`
}

type validationReport struct {
	InstanceID     string            `tfsdk:"instance_id"`
	Status         string            `tfsdk:"status"`
	Summary        string            `tfsdk:"summary"`
	Failures       []string          `tfsdk:"failures"`
	Rejected       []string          `tfsdk:"rejected"`
	AttestedRegion string            `tfsdk:"attested_region"`
	AttestedZoneID string            `tfsdk:"attested_zone_id"`
	ReportKey      string            `tfsdk:"report_key"`
	GeneratedAt    string            `tfsdk:"generated_at"`
	Checks         []validationCheck `tfsdk:"checks"`
}

type validationCheck struct {
	ID       string `tfsdk:"id"`
	Subject  string `tfsdk:"subject"`
	Status   string `tfsdk:"status"`
	Expected string `tfsdk:"expected"`
	Observed string `tfsdk:"observed"`
	Reason   string `tfsdk:"reason"`
}

func (d *validationReportsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_validation_reports"
}

func (d *validationReportsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	str := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	strs := func(desc string) schema.ListAttribute {
		return schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The hwprobe reports of a validated GPU cluster: for each instance that published under the cluster's reports prefix, its newest report judged as the validation gate judges it " +
			"(signed identity verified, instance, account and region matched, attested location inside the jurisdiction), with every check and benchmark figure (efficiency against the catalog peak in `observed`).",
		Attributes: map[string]schema.Attribute{
			"id":                   str("The reports prefix read."),
			"name":                 schema.StringAttribute{Required: true, MarkdownDescription: "Name of the cluster (its reports are under `<reports_s3_uri>/<name>/`)."},
			"reports_s3_uri":       schema.StringAttribute{Required: true, MarkdownDescription: "The validation block's `reports_s3_uri`."},
			"profile":              schema.StringAttribute{Optional: true, MarkdownDescription: "The profile the reports must be against, as the gate requires: a cluster's or footprint's `validation_profile`. Reports against another profile are ignored. Unset: reports of any profile."},
			"max_age":              schema.StringAttribute{Optional: true, MarkdownDescription: "Ignore reports S3 stored longer ago than this, e.g. `24h`. Unset: any age."},
			"trusted_certificates": schema.StringAttribute{Optional: true, MarkdownDescription: "PEM certificates that verify the identity documents (the validation block's `trusted_certificates`). Unset: the AWS certificate embedded for the provider's region, where there is one."},
			"reports": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "One entry per instance, sorted by instance id.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"instance_id":      str("Instance id the report was published for."),
					"status":           str("`pass`, `fail` or `rejected` (no report of it verified)."),
					"summary":          str("One line: the checks passed, or the first failure or rejection."),
					"failures":         strs("Each failed check: check, expected, observed."),
					"rejected":         strs("Each report refused, with why."),
					"attested_region":  str("Region of the verified identity document."),
					"attested_zone_id": str("Zone id of the verified identity document."),
					"report_key":       str("The report read, under the prefix."),
					"generated_at":     str("When the report was generated (RFC 3339)."),
					"checks": schema.ListNestedAttribute{
						Computed:            true,
						MarkdownDescription: "Every check of the report, benchmarks (`bench.<name>`) included.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"id":       str("Check id, e.g. `gpu.nvlink` or `bench.gpu_gemm_bf16`."),
							"subject":  str("What it concerns, e.g. `gpu3` or `avx512f`."),
							"status":   str("`pass`, `fail` or `not-run`."),
							"expected": str("What the profile declared."),
							"observed": str("What the node showed; for a benchmark, its figure and efficiency against the peak."),
							"reason":   str("Why it failed or did not run."),
						}},
					},
				}},
			},
		},
	}
}

func (d *validationReportsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.meta = metaFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *validationReportsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m validationReportsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || d.meta == nil {
		return
	}
	v := platform.ValidationSpec{ReportsS3URI: m.ReportsS3URI.ValueString(), ReportsKMSKeyARN: "-", TrustedCertificates: m.TrustedCertificates.ValueString()}
	for _, p := range v.Validate("", nil) {
		if p.Path == ".reports_s3_uri" || p.Path == ".trusted_certificates" {
			resp.Diagnostics.AddAttributeError(parsePath(p.Path[1:]), p.Summary, p.Detail)
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	q := platform.ReportsQuery{Profile: m.Profile.ValueString()}
	if s := m.MaxAge.ValueString(); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			resp.Diagnostics.AddAttributeError(path.Root("max_age"), "Invalid max_age", fmt.Sprintf("%q is not a positive duration such as 24h or 90m.", s))
			return
		}
		q.MaxAge = d
	}
	nodes, err := d.meta.ValidationReports(ctx, v.ReportsS3URI, m.Name.ValueString(), v.TrustedCertificates, q)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("reading validation reports (%s)", m.Name.ValueString()), err.Error())
		return
	}
	m.ID = types.StringValue(v.ReportsPrefix(m.Name.ValueString()))
	m.Reports = []validationReport{}
	for _, n := range nodes {
		r := validationReport{InstanceID: n.InstanceID, Status: n.Status, Summary: n.Summary, Failures: nonNil(n.Failures), Rejected: nonNil(n.Rejected),
			AttestedRegion: n.AttestedRegion, AttestedZoneID: n.AttestedZoneID, ReportKey: n.ReportKey, Checks: []validationCheck{}}
		if !n.GeneratedAt.IsZero() {
			r.GeneratedAt = n.GeneratedAt.UTC().Format(time.RFC3339)
		}
		for _, c := range n.Checks {
			r.Checks = append(r.Checks, validationCheck{ID: c.ID, Subject: c.Subject, Status: c.Status, Expected: c.Expected, Observed: c.Observed, Reason: c.Reason})
		}
		m.Reports = append(m.Reports, r)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
