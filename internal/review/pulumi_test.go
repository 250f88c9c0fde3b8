package review

import "testing"

func TestPulumiNames(t *testing.T) {
	types := map[string]string{
		"mlplatform:index:GpuCluster":                               "mlplatform_gpu_cluster",
		"mlplatform:index:CpuFootprint":                             "mlplatform_cpu_footprint",
		"mlplatform:index:ServingEndpoint":                          "mlplatform_serving_endpoint",
		"aws:s3/bucket:Bucket":                                      "aws_s3_bucket",
		"aws:s3/bucketV2:BucketV2":                                  "aws_s3_bucket",
		"aws:kms/key:Key":                                           "aws_kms_key",
		"aws:ec2/instance:Instance":                                 "aws_instance",
		"aws:sagemaker/endpointConfiguration:EndpointConfiguration": "aws_sagemaker_endpoint_configuration",
		"not-a-token":                                               "not-a-token",
	}
	for in, want := range types {
		if got := pulumiType(in); got != want {
			t.Errorf("pulumiType(%q) = %q, want %q", in, got, want)
		}
	}
	keys := map[string]string{"instanceType": "instance_type", "kmsKeyArn": "kms_key_arn", "s3Uri": "s3_uri", "zoneId": "zone_id", "GPUCount": "gpu_count", "name": "name"}
	for in, want := range keys {
		if got := camelToSnake(in); got != want {
			t.Errorf("camelToSnake(%q) = %q, want %q", in, got, want)
		}
	}
	if got := pulumiAddress("urn:pulumi:dev::platform::mlplatform:index:GpuCluster::train"); got != "mlplatform:index:GpuCluster::train" {
		t.Errorf("pulumiAddress = %q", got)
	}
	// The engine's unknown sentinel becomes "known after apply", tags keep their keys.
	v := snakeKeys(map[string]any{"nodeIds": pulumiUnknown, "tags": map[string]any{"costCenter": "1"}}).(map[string]any)
	if v["node_ids"] != unknownValue || v["tags"].(map[string]any)["costCenter"] != "1" {
		t.Errorf("snakeKeys = %v", v)
	}
}
