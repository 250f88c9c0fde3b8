//go:build tools

// This file pins modules that packages under construction import, so that
// `go mod tidy` keeps them. It is not built.
package main

import (
	_ "github.com/NVIDIA/go-nvml/pkg/nvml"
	_ "github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	_ "github.com/aws/aws-sdk-go-v2/aws"
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	_ "github.com/aws/aws-sdk-go-v2/service/ec2"
	_ "github.com/aws/aws-sdk-go-v2/service/kms"
	_ "github.com/aws/aws-sdk-go-v2/service/s3"
	_ "github.com/aws/aws-sdk-go-v2/service/sagemaker"
	_ "github.com/aws/aws-sdk-go-v2/service/ssm"
	_ "github.com/aws/aws-sdk-go-v2/service/sts"
	_ "github.com/ebitengine/purego"
	_ "github.com/hashicorp/hcl/v2/gohcl"
	_ "github.com/hashicorp/hcl/v2/hclsimple"
	_ "github.com/hashicorp/hcl/v2/hclwrite"
	_ "github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	_ "github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	_ "github.com/hashicorp/terraform-plugin-framework/providerserver"
	_ "github.com/hashicorp/terraform-plugin-go/tfprotov6"
	_ "github.com/hashicorp/terraform-plugin-log/tflog"
	_ "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	_ "github.com/hashicorp/terraform-plugin-testing/plancheck"
	_ "github.com/hashicorp/terraform-plugin-testing/statecheck"
	_ "github.com/klauspost/cpuid/v2"
	_ "github.com/pulumi/pulumi-go-provider"
	_ "github.com/pulumi/pulumi-go-provider/infer"
	_ "github.com/pulumi/pulumi-go-provider/integration"
	_ "github.com/pulumi/pulumi/sdk/v3/go/auto"
	_ "github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)
