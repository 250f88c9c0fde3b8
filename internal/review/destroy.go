package review

import (
	"fmt"
	"sort"
	"strings"
)

// statefulHolds says what data a stateful resource type holds, for the
// destructive-changes section; the types not listed hold none the platform
// knows of.
func statefulHolds(c *Change) (string, bool) {
	v := values{m: c.Before}
	if v.m == nil {
		v = values{m: c.After}
	}
	s := func(path ...string) string { x, _ := v.str(path...); return x }
	switch c.Type {
	case "mlplatform_feature_store", "aws_sagemaker_feature_group":
		where := []string{}
		if u := s("offline_store", "s3_uri"); u != "" {
			where = append(where, "offline store "+u)
		}
		if u := s("offline_store_config", "s3_storage_config", "s3_uri"); u != "" {
			where = append(where, "offline store "+u)
		}
		if on, _ := v.get("online_store", "enabled"); on == true {
			where = append(where, "online store records")
		}
		if on, _ := v.get("online_store_config", "enable_online_store"); on == true {
			where = append(where, "online store records")
		}
		h := "feature group records"
		if len(where) > 0 {
			h += ": " + strings.Join(where, ", ")
		}
		return h + " (the online store is lost on delete; offline files stay in S3 but lose their feature group and Glue table)", true
	case "mlplatform_serving_endpoint", "aws_sagemaker_endpoint":
		return "a live endpoint: requests fail until a new one is InService", true
	case "aws_sagemaker_model":
		return "the model definition endpoints use", true
	case "aws_s3_bucket":
		force, _ := v.get("force_destroy")
		if force == true {
			return fmt.Sprintf("bucket %s with force_destroy = true: every object is deleted", s("bucket")), true
		}
		return fmt.Sprintf("bucket %s and its objects (delete fails while it holds objects, unless force_destroy)", s("bucket")), true
	case "aws_kms_key", "aws_kms_replica_key":
		days, _ := v.get("deletion_window_in_days")
		w := "the deletion window"
		if f, ok := num(days); ok {
			w = fmt.Sprintf("%.0f days", f)
		}
		return fmt.Sprintf("key material: data encrypted under it becomes unreadable after %s", w), true
	case "aws_sagemaker_endpoint_configuration":
		return "the configuration a live endpoint may be serving from", true
	case "aws_ebs_volume", "aws_efs_file_system", "aws_fsx_lustre_file_system", "aws_db_instance", "aws_rds_cluster", "aws_dynamodb_table":
		return "stored data", true
	case "mlplatform_gpu_cluster":
		return "", false
	}
	return "", false
}

func buildDestructive(changes []Change) []Destroy {
	out := []Destroy{}
	for i := range changes {
		c := &changes[i]
		if c.Action != ActionDelete && c.Action != ActionReplace {
			continue
		}
		holds, stateful := statefulHolds(c)
		if c.Type == "mlplatform_gpu_cluster" {
			n, _ := num(lookup(c.Before, "node_count"))
			holds = fmt.Sprintf("%.0f node(s) of %s: running jobs and local instance storage are lost", n, str(lookup(c.Before, "instance_type")))
		}
		rp := c.ReplacePaths
		if rp == nil {
			rp = []string{}
		}
		out = append(out, Destroy{Address: c.Address, Type: c.Type, Action: c.Action, Stateful: stateful, Holds: holds, ReplacePaths: rp, ActionReason: c.ActionReason})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Stateful && !out[j].Stateful })
	return out
}
