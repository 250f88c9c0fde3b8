package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mlplatform/mlplatform/hwprobe/profile"
	"github.com/mlplatform/mlplatform/hwprobe/report"
)

func reportCmd(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "publish":
			return publishCmd(ctx, a, args[1:])
		case "serve":
			return serveCmd(ctx, a, args[1:])
		}
	}
	fset := newFlags(a, "report", "publish|serve [flags]", `
Work with hwprobe reports.

Subcommands:
  publish   write the JSON report to S3 in the profile's region (SSE-KMS)
  serve     answer the validation gate's challenges with the report (a daemon)`,
		"hwprobe report publish --profile /etc/hwprobe/profile.hcl")
	if done, err := parse(a, fset, args); done {
		return err
	}
	return cannotRun(errors.New(`report: missing subcommand (try "hwprobe report publish --help" or "hwprobe report serve --help")`))
}

func publishCmd(ctx context.Context, a *app, args []string) error {
	fset := newFlags(a, "report publish", "--profile FILE.hcl [flags]", `
Probe and validate the node (or take an existing report with --report) and
write the JSON report, with the signed instance identity document attached,
to S3. The bucket and the KMS key must be in the profile's region
(host.region): any other region is refused. On EC2 the bucket must also
belong to the account of the instance identity document. A report is
written once: when its key exists already, nothing is written. The
destination is the profile's report block unless --to and --kms-key say
otherwise.

The AWS configuration is the standard one (credential chain, AWS_REGION is
ignored in favour of the profile's region); AWS_ENDPOINT_URL_S3 or
AWS_ENDPOINT_URL override the S3 endpoint, with path-style addressing.

Exit codes: 0 the report was written (whatever its checks say); 2 it was
not.`,
		"hwprobe report publish --profile /etc/hwprobe/profile.hcl --to s3://uae-hwprobe-reports/train-a/")
	var pf probeFlags
	pf.register(fset)
	profilePath := fset.String("profile", "", "profile `file` (HCL): gives the region and the default destination (required)")
	to := fset.String("to", "", "destination `s3://bucket/prefix/` (default: the profile's report.s3_uri)")
	kmsKey := fset.String("kms-key", "", "KMS key `id`, alias or ARN in the profile's region (default: the profile's report.kms_key_id, else aws/s3)")
	from := fset.String("report", "", "publish this report `file` (from validate --report) instead of validating now")
	if done, err := parse(a, fset, args); done {
		return err
	}
	if *profilePath == "" {
		return cannotRun(errors.New("report publish: --profile is required"))
	}
	p, _, err := loadProfile(*profilePath)
	if err != nil {
		return err
	}
	t, err := reportTarget("report publish", p, *to, *kmsKey)
	if err != nil {
		return err
	}
	var rep report.Report
	if *from != "" {
		if rep, err = readReport("report publish", *from); err != nil {
			return err
		}
	} else if rep, err = validateNode(ctx, a, pf, *profilePath); err != nil {
		return err
	}
	if err := bindNode("report publish", &t, rep); err != nil {
		return err
	}
	client, err := a.reportS3(ctx, t.Region)
	if err != nil {
		return cannotRun(err)
	}
	uri, err := report.Publish(ctx, client, t, rep)
	if err != nil {
		return cannotRun(err)
	}
	fmt.Fprintln(a.stdout, uri)
	return nil
}

// reportTarget is where a report goes: --to and --kms-key, else the
// profile's report block; in the profile's region.
func reportTarget(cmd string, p *profile.Profile, to, kmsKey string) (report.Target, error) {
	t := report.Target{URI: to, KMSKeyID: kmsKey, Region: p.Region()}
	if p.Report != nil {
		if t.URI == "" {
			t.URI = p.Report.S3URI
		}
		if t.KMSKeyID == "" {
			t.KMSKeyID = p.Report.KMSKeyID
		}
	}
	if t.URI == "" {
		return t, cannotRun(fmt.Errorf("%s: no destination: give --to or a report block in the profile", cmd))
	}
	if t.Region == "" {
		return t, cannotRun(fmt.Errorf("%s: the profile declares no host.region, so the report's region cannot be checked", cmd))
	}
	return t, nil
}

// readReport reads a report file written by validate --report.
func readReport(cmd, name string) (report.Report, error) {
	var rep report.Report
	b, err := readFile(name)
	if err != nil {
		return rep, cannotRun(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil || rep.Schema != report.SchemaVersion {
		return rep, cannotRun(fmt.Errorf("%s: %s is not a %s report (%v)", cmd, name, report.SchemaVersion, err))
	}
	return rep, nil
}

// bindNode refuses a report from a node in another region than t's, and
// makes the bucket owner the account of the node's identity document.
func bindNode(cmd string, t *report.Target, rep report.Report) error {
	if inv := rep.Inventory; inv != nil && inv.Host.OnEC2 {
		if inv.Host.Region != t.Region {
			return cannotRun(fmt.Errorf("%s: node runs in %s, profile region is %s: refusing to publish across regions", cmd, inv.Host.Region, t.Region))
		}
		t.BucketOwner = inv.Host.AccountID // the identity document's account
	}
	return nil
}

// reportS3 is the S3 client for region; AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL make it path-style, as emulators expect.
func (a *app) reportS3(ctx context.Context, region string) (report.S3, error) {
	pathStyle := a.getenv("AWS_ENDPOINT_URL_S3") != "" || a.getenv("AWS_ENDPOINT_URL") != ""
	return a.newS3(ctx, region, pathStyle)
}
