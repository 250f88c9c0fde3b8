package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"

	"github.com/mlplatform/mlplatform/hwprobe/lifecycle"
	"github.com/mlplatform/mlplatform/hwprobe/report"
)

func lifecycleCmd(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 && args[0] == "complete" {
		return completeCmd(ctx, a, args[1:])
	}
	fset := newFlags(a, "lifecycle", "complete [flags]", `
Work with the node's Auto Scaling lifecycle.

Subcommands:
  complete  complete the launch lifecycle action: CONTINUE when the node
            passed its validation, ABANDON (or --on-fail) when it did not`,
		"hwprobe lifecycle complete --region me-central-1 --hook mlplatform-validation --group mlplatform-cpu-smb --report report.json")
	if done, err := parse(a, fset, args); done {
		return err
	}
	return cannotRun(errors.New(`lifecycle: missing subcommand (try "hwprobe lifecycle complete --help")`))
}

func completeCmd(ctx context.Context, a *app, args []string) error {
	fset := newFlags(a, "lifecycle complete", "--region REGION --hook NAME --group ASG (--report FILE | --result R) [flags]", `
Complete this node's launch lifecycle action on its Auto Scaling group, so
that the group puts it in service (CONTINUE) or terminates and replaces it
(ABANDON). The result is --result, or read from the validation report
(validate --report): CONTINUE when every check passed, --on-fail when not.
The instance id comes from the instance metadata service unless
--instance-id gives it.

mlplatform's own footprints do not use it: no node completes its own
launch action there (the gate and mlplatform approve do, and the node's
role is denied it). It is for groups whose operators decide otherwise.

Exit codes: 0 the action was completed; 2 it was not.`,
		"hwprobe lifecycle complete --region me-central-1 --hook mlplatform-validation --group mlplatform-cpu-smb --report /var/lib/mlplatform/hwprobe/report.json")
	region := fset.String("region", "", "the group's `region` (required)")
	hook := fset.String("hook", "", "lifecycle hook `name` (required)")
	group := fset.String("group", "", "Auto Scaling group `name` (required)")
	from := fset.String("report", "", "validation report `file`: its result decides")
	result := fset.String("result", "", "CONTINUE or ABANDON, instead of a report")
	onFail := fset.String("on-fail", lifecycle.Abandon, "result when the report's validation did not pass: ABANDON or CONTINUE")
	instanceID := fset.String("instance-id", "", "the instance `id` (default: from the instance metadata service)")
	if done, err := parse(a, fset, args); done {
		return err
	}
	if *region == "" || *hook == "" || *group == "" {
		return cannotRun(errors.New("lifecycle complete: --region, --hook and --group are required"))
	}
	fail, err := lifecycle.ParseResult(*onFail)
	if err != nil {
		return cannotRun(err)
	}
	var res string
	switch {
	case *result != "" && *from != "":
		return cannotRun(errors.New("lifecycle complete: give --result or --report, not both"))
	case *result != "":
		if res, err = lifecycle.ParseResult(*result); err != nil {
			return cannotRun(err)
		}
	case *from != "":
		b, err := readFile(*from)
		if err != nil {
			return cannotRun(err)
		}
		var rep report.Report
		if err := json.Unmarshal(b, &rep); err != nil || rep.Schema != report.SchemaVersion {
			return cannotRun(fmt.Errorf("lifecycle complete: %s is not a %s report (%v)", *from, report.SchemaVersion, err))
		}
		exit := 2
		if rep.Validation != nil {
			exit = rep.Validation.Exit
		}
		res = lifecycle.ResultFor(exit, fail)
	default:
		return cannotRun(errors.New("lifecycle complete: give --report or --result"))
	}
	id := *instanceID
	if id == "" {
		out, err := a.newIMDS().GetMetadata(ctx, &imds.GetMetadataInput{Path: "instance-id"})
		if err != nil {
			return cannotRun(fmt.Errorf("lifecycle complete: instance id from the metadata service: %w", err))
		}
		raw, err := io.ReadAll(io.LimitReader(out.Content, 256))
		_ = out.Content.Close()
		if err != nil {
			return cannotRun(fmt.Errorf("lifecycle complete: instance id: %w", err))
		}
		id = strings.TrimSpace(string(raw))
	}
	client, err := a.newAutoScaling(ctx, *region)
	if err != nil {
		return cannotRun(err)
	}
	if err := lifecycle.Complete(ctx, client, lifecycle.Action{Hook: *hook, Group: *group, InstanceID: id, Result: res}); err != nil {
		return cannotRun(err)
	}
	fmt.Fprintf(a.stdout, "%s %s %s\n", id, *group, res)
	return nil
}
