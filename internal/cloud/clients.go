// Package cloud holds the aws-sdk-go-v2 clients and the AWS verbs (Find,
// Create, Update, Delete, Wait) shared by the Terraform and Pulumi front ends.
package cloud

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// ErrNotFound is returned by every Find verb when the thing does not exist.
var ErrNotFound = errors.New("not found")

// Services lists the service keys accepted in Config.Endpoints.
var services = []string{"ec2", "s3", "kms", "sagemaker", "ssm", "sts"}

// Services returns the endpoint keys that Config.Endpoints accepts.
func Services() []string { return append([]string(nil), services...) }

// Config is what both front ends translate their provider configuration to.
type Config struct {
	Region    string
	Profile   string
	Endpoints map[string]string // service key -> URL; empty values are ignored
	// UserAgent is appended to the SDK's user agent.
	UserAgent string
}

// Clients are the AWS service clients for one provider configuration.
type Clients struct {
	Region    string
	AWS       aws.Config
	EC2       *ec2.Client
	S3        *s3.Client
	KMS       *kms.Client
	SageMaker *sagemaker.Client
	SSM       *ssm.Client
	STS       *sts.Client
}

// New loads the standard AWS configuration (credential chain, AWS_ENDPOINT_URL
// and AWS_ENDPOINT_URL_<SERVICE>) and applies the per-service overrides of cfg.
func New(ctx context.Context, cfg Config) (*Clients, error) {
	for k := range cfg.Endpoints {
		if !slices.Contains(services, k) {
			return nil, fmt.Errorf("unknown endpoint service %q (known: %s)", k, strings.Join(services, ", "))
		}
	}
	opts := []func(*config.LoadOptions) error{config.WithRegion(cfg.Region)}
	if cfg.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cfg.Profile))
	}
	if cfg.UserAgent != "" {
		opts = append(opts, config.WithAppID(cfg.UserAgent))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	ep := func(name string) *string {
		if v := cfg.Endpoints[name]; v != "" {
			return aws.String(v)
		}
		return nil
	}
	return &Clients{
		Region: cfg.Region,
		AWS:    awsCfg,
		EC2: ec2.NewFromConfig(awsCfg, func(o *ec2.Options) {
			if u := ep("ec2"); u != nil {
				o.BaseEndpoint = u
			}
		}),
		S3: s3.NewFromConfig(awsCfg, func(o *s3.Options) {
			if u := ep("s3"); u != nil {
				o.BaseEndpoint = u
			}
			// Emulators and VPC endpoints given by URL serve path-style requests.
			o.UsePathStyle = o.BaseEndpoint != nil || awsCfg.BaseEndpoint != nil || os.Getenv("AWS_ENDPOINT_URL_S3") != ""
		}),
		KMS: kms.NewFromConfig(awsCfg, func(o *kms.Options) {
			if u := ep("kms"); u != nil {
				o.BaseEndpoint = u
			}
		}),
		SageMaker: sagemaker.NewFromConfig(awsCfg, func(o *sagemaker.Options) {
			if u := ep("sagemaker"); u != nil {
				o.BaseEndpoint = u
			}
		}),
		SSM: ssm.NewFromConfig(awsCfg, func(o *ssm.Options) {
			if u := ep("ssm"); u != nil {
				o.BaseEndpoint = u
			}
		}),
		STS: sts.NewFromConfig(awsCfg, func(o *sts.Options) {
			if u := ep("sts"); u != nil {
				o.BaseEndpoint = u
			}
		}),
	}, nil
}

// ForRegion returns clients for another region with the same credentials and
// overrides: S3 GetBucketLocation, KMS DescribeKey and EC2 zone lookups must
// be asked where the thing lives. Every client is rebuilt for the region.
func (c *Clients) ForRegion(region string) *Clients {
	if region == c.Region {
		return c
	}
	cfg := c.AWS.Copy()
	cfg.Region = region
	return &Clients{
		Region:    region,
		AWS:       cfg,
		EC2:       ec2.NewFromConfig(cfg, func(o *ec2.Options) { *o = c.EC2.Options(); o.Region = region }),
		S3:        s3.NewFromConfig(cfg, func(o *s3.Options) { *o = c.S3.Options(); o.Region = region }),
		KMS:       kms.NewFromConfig(cfg, func(o *kms.Options) { *o = c.KMS.Options(); o.Region = region }),
		SageMaker: sagemaker.NewFromConfig(cfg, func(o *sagemaker.Options) { *o = c.SageMaker.Options(); o.Region = region }),
		SSM:       ssm.NewFromConfig(cfg, func(o *ssm.Options) { *o = c.SSM.Options(); o.Region = region }),
		STS:       sts.NewFromConfig(cfg, func(o *sts.Options) { *o = c.STS.Options(); o.Region = region }),
	}
}
