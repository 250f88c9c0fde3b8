// Package cloud holds the aws-sdk-go-v2 clients and the AWS verbs (Find,
// Create, Update, Delete, Wait) shared by the Terraform and Pulumi front ends.
package cloud

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/middleware"
)

// ErrNotFound is returned by every Find verb when the thing does not exist.
var ErrNotFound = errors.New("not found")

// service is one AWS service the provider builds a client for: its key in
// Config.Endpoints, the SDK ID of its package (from which the SDK derives
// the names of its endpoint settings) and the first labels of its endpoint
// hosts (ec2.me-central-1.amazonaws.com, api.sagemaker.me-central-1...).
type service struct{ key, sdkID, hostPrefix string }

// serviceTable lists every client New builds, in a fixed order.
func serviceTable() []service {
	return []service{
		{"ec2", ec2.ServiceID, "ec2"},
		{"s3", s3.ServiceID, "s3"},
		{"kms", kms.ServiceID, "kms"},
		{"sagemaker", sagemaker.ServiceID, "api.sagemaker"},
		{"ssm", ssm.ServiceID, "ssm"},
		{"sts", sts.ServiceID, "sts"},
		{"autoscaling", autoscaling.ServiceID, "autoscaling"},
		{"applicationautoscaling", applicationautoscaling.ServiceID, "application-autoscaling"},
		{"cloudwatch", cloudwatch.ServiceID, "monitoring"},
		{"secretsmanager", secretsmanager.ServiceID, "secretsmanager"},
		{"eks", eks.ServiceID, "eks"},
		{"iam", iam.ServiceID, "iam"},
	}
}

func lookupService(key string) (service, bool) {
	i := slices.IndexFunc(serviceTable(), func(s service) bool { return s.key == key })
	if i < 0 {
		return service{}, false
	}
	return serviceTable()[i], true
}

// Services returns the endpoint keys that Config.Endpoints accepts: one per
// client New builds.
func Services() []string {
	var keys []string
	for _, s := range serviceTable() {
		keys = append(keys, s.key)
	}
	return keys
}

// GlobalEndpointEnv is the environment variable that sets the endpoint of
// every service the SDK builds a client for.
const GlobalEndpointEnv = "AWS_ENDPOINT_URL"

// EndpointEnvVar is the environment variable the SDK reads for the endpoint
// of the service with endpoint key key: AWS_ENDPOINT_URL_ and the service's
// SDK ID upper-cased, spaces as underscores (Auto Scaling:
// AWS_ENDPOINT_URL_AUTO_SCALING). "" for an unknown key.
func EndpointEnvVar(key string) string {
	s, ok := lookupService(key)
	if !ok {
		return ""
	}
	return GlobalEndpointEnv + "_" + strings.ReplaceAll(strings.ToUpper(s.sdkID), " ", "_")
}

// EndpointHostPrefix is the first labels of the AWS endpoint hosts of the
// service with endpoint key key (api.sagemaker for sagemaker); "" for an
// unknown key.
func EndpointHostPrefix(key string) string {
	s, _ := lookupService(key)
	return s.hostPrefix
}

// ResolvedEndpoint is where a client sends its calls when that is not the
// SDK's default for the region: the endpoint it resolved from the
// configuration, the environment or the shared config file.
type ResolvedEndpoint struct {
	Service string // endpoint key, e.g. autoscaling
	URL     string
}

// ResolvedEndpoints returns the base endpoint every client resolved (after
// Config.Endpoints, AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL and the
// shared config's endpoint_url and services sections, as the SDK weighs
// them), in Services order; clients on the SDK's default endpoint are left
// out.
func (c *Clients) ResolvedEndpoints() []ResolvedEndpoint {
	bases := map[string]*string{
		"ec2": c.EC2.Options().BaseEndpoint, "s3": c.S3.Options().BaseEndpoint, "kms": c.KMS.Options().BaseEndpoint,
		"sagemaker": c.SageMaker.Options().BaseEndpoint, "ssm": c.SSM.Options().BaseEndpoint, "sts": c.STS.Options().BaseEndpoint,
		"autoscaling": c.AutoScaling.Options().BaseEndpoint, "applicationautoscaling": c.AppAutoScaling.Options().BaseEndpoint,
		"cloudwatch": c.CloudWatch().Options().BaseEndpoint, "secretsmanager": c.SecretsManager().Options().BaseEndpoint,
		"eks": c.EKS().Options().BaseEndpoint, "iam": c.IAM().Options().BaseEndpoint,
	}
	var out []ResolvedEndpoint
	for _, k := range Services() {
		if u := aws.ToString(bases[k]); u != "" {
			out = append(out, ResolvedEndpoint{Service: k, URL: u})
		}
	}
	return out
}

// Config is what both front ends translate their provider configuration to.
type Config struct {
	Region  string
	Profile string
	// AssumeRole, when its RoleARN is set, is the role every call is made
	// as: STS AssumeRole from the credential chain's credentials,
	// refreshed before they expire.
	AssumeRole AssumeRole
	Endpoints  map[string]string // service key -> URL; empty values are ignored
	// UserAgent is appended to the SDK's user agent.
	UserAgent string
	// Limits bound every AWS call; zero fields take DefaultLimits.
	Limits Limits
}

// AssumeRole is the role the provider works as.
type AssumeRole struct {
	RoleARN, SessionName, ExternalID string
}

// DefaultRoleSessionName names the assumed role's sessions (CloudTrail
// shows it) unless the configuration names another.
const DefaultRoleSessionName = "mlplatform"

// Limits bound every AWS call, so that an endpoint that accepts the
// connection and never answers, or answers only with throttling and 5xx
// errors, fails the call with a clear error instead of hanging.
type Limits struct {
	// ConnectTimeout bounds the TCP connection (and the TLS handshake).
	ConnectTimeout time.Duration
	// ResponseTimeout bounds one attempt: from the request sent to the
	// response headers received.
	ResponseTimeout time.Duration
	// OperationTimeout bounds one call, all its retries included.
	OperationTimeout time.Duration
	// MaxAttempts per call (adaptive retry of throttling, 5xx and
	// connection errors).
	MaxAttempts int
	// MaxBackoff caps the wait between attempts.
	MaxBackoff time.Duration
}

// DefaultLimits are the limits of every client unless Config.Limits says
// otherwise: 10 attempts with jittered exponential backoff up to 20s, each
// attempt answered within 60s, the whole call within 5 minutes. A caller's
// deadline (a Terraform timeout) bounds the retries too.
func DefaultLimits() Limits {
	return Limits{ConnectTimeout: 10 * time.Second, ResponseTimeout: 60 * time.Second, OperationTimeout: 5 * time.Minute, MaxAttempts: 10, MaxBackoff: 20 * time.Second}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.ConnectTimeout <= 0 {
		l.ConnectTimeout = d.ConnectTimeout
	}
	if l.ResponseTimeout <= 0 {
		l.ResponseTimeout = d.ResponseTimeout
	}
	if l.OperationTimeout <= 0 {
		l.OperationTimeout = d.OperationTimeout
	}
	if l.MaxAttempts <= 0 {
		l.MaxAttempts = d.MaxAttempts
	}
	if l.MaxBackoff <= 0 {
		l.MaxBackoff = d.MaxBackoff
	}
	return l
}

// CallTimeoutError is an AWS call that got no answer within its limit.
type CallTimeoutError struct {
	Service, Operation string
	Limit              time.Duration
	Err                error
}

func (e *CallTimeoutError) Error() string {
	return fmt.Sprintf("%s %s: no answer within %s (check the endpoint and the network): %v", e.Service, e.Operation, e.Limit, e.Err)
}

func (e *CallTimeoutError) Unwrap() error { return e.Err }

// boundedCalls gives every call of a client an overall deadline (all
// attempts) and turns its expiry into a *CallTimeoutError.
func boundedCalls(limit time.Duration) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("mlplatformCallDeadline", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			callCtx, cancel := context.WithTimeout(ctx, limit)
			defer cancel()
			out, md, err := next.HandleInitialize(callCtx, in)
			if err != nil && ctx.Err() == nil && callCtx.Err() != nil {
				err = &CallTimeoutError{Service: awsmiddleware.GetServiceID(ctx), Operation: awsmiddleware.GetOperationName(ctx), Limit: limit, Err: err}
			}
			return out, md, err
		}), middleware.Before)
	}
}

// httpClient bounds connecting and waiting for a response.
func httpClient(l Limits) *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = l.ConnectTimeout }).
		WithTransportOptions(func(t *http.Transport) {
			t.TLSHandshakeTimeout = l.ConnectTimeout
			t.ResponseHeaderTimeout = l.ResponseTimeout
		})
}

// retryer retries throttling, 5xx and connection errors adaptively: the
// client slows down its own request rate while it is throttled.
func retryer(l Limits) func() aws.Retryer {
	return func() aws.Retryer {
		return retry.NewAdaptiveMode(func(o *retry.AdaptiveModeOptions) {
			o.StandardOptions = append(o.StandardOptions, func(so *retry.StandardOptions) {
				so.MaxAttempts = l.MaxAttempts
				so.MaxBackoff = l.MaxBackoff
				// Timeouts of one attempt are retried too.
				so.Retryables = append(slices.Clone(so.Retryables), retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						return aws.TrueTernary
					}
					return aws.UnknownTernary
				}))
			})
		})
	}
}

// Clients are the AWS service clients for one provider configuration.
type Clients struct {
	Region    string
	AWS       aws.Config
	EC2       EC2Client
	S3        S3Client
	KMS       KMSClient
	SageMaker SageMakerClient
	SSM       SSMClient
	STS       STSClient
	// AutoScaling is EC2 Auto Scaling (CPU footprints).
	AutoScaling AutoScalingClient
	// AppAutoScaling is Application Auto Scaling (serving variants).
	AppAutoScaling AppAutoScalingClient

	// CloudWatch (serving endpoints' standard alarms) is built on first
	// use: see the CloudWatch method.
	cwEndpoint string
	cwOnce     sync.Once
	cw         CloudWatchClient
	// Secrets Manager (the Slurm munge key's residency) is built on first
	// use too: see the SecretsManager method.
	smEndpoint string
	smOnce     sync.Once
	sm         SecretsManagerClient
	// EKS and IAM (orchestrator.eks: the cluster, the access entry, the
	// instance profile's role) too: see the EKS and IAM methods.
	eksEndpoint, iamEndpoint string
	eksOnce, iamOnce         sync.Once
	eks                      EKSClient
	iam                      IAMClient
}

// New loads the standard AWS configuration (credential chain, AWS_ENDPOINT_URL
// and AWS_ENDPOINT_URL_<SERVICE>) and applies the per-service overrides of cfg.
func New(ctx context.Context, cfg Config) (*Clients, error) {
	for k := range cfg.Endpoints {
		if _, ok := lookupService(k); !ok {
			return nil, fmt.Errorf("unknown endpoint service %q (known: %s)", k, strings.Join(Services(), ", "))
		}
	}
	limits := cfg.Limits.withDefaults()
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(cfg.Region),
		config.WithHTTPClient(httpClient(limits)),
		config.WithRetryer(retryer(limits)),
		config.WithAPIOptions([]func(*middleware.Stack) error{boundedCalls(limits.OperationTimeout)}),
	}
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
	if r := cfg.AssumeRole; r.RoleARN != "" {
		stsClient := sts.NewFromConfig(awsCfg, func(o *sts.Options) {
			if u := ep("sts"); u != nil {
				o.BaseEndpoint = u
			}
		})
		awsCfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient, r.RoleARN, func(o *stscreds.AssumeRoleOptions) {
			o.RoleSessionName = r.SessionName
			if o.RoleSessionName == "" {
				o.RoleSessionName = DefaultRoleSessionName
			}
			if r.ExternalID != "" {
				o.ExternalID = aws.String(r.ExternalID)
			}
		}))
	}
	return &Clients{
		Region:      cfg.Region,
		AWS:         awsCfg,
		cwEndpoint:  cfg.Endpoints["cloudwatch"],
		smEndpoint:  cfg.Endpoints["secretsmanager"],
		eksEndpoint: cfg.Endpoints["eks"],
		iamEndpoint: cfg.Endpoints["iam"],
		EC2: NewEC2Client(ec2.NewFromConfig(awsCfg, func(o *ec2.Options) {
			if u := ep("ec2"); u != nil {
				o.BaseEndpoint = u
			}
		})),
		S3: NewS3Client(s3.NewFromConfig(awsCfg, func(o *s3.Options) {
			if u := ep("s3"); u != nil {
				o.BaseEndpoint = u
			}
			// Emulators and VPC endpoints given by URL serve path-style
			// requests. BaseEndpoint holds what the SDK resolved from the
			// environment and the shared config before this override.
			o.UsePathStyle = o.BaseEndpoint != nil
			// Reports are checked by their signature and digest, not by
			// S3's checksums: no line per object read that has none.
			o.DisableLogOutputChecksumValidationSkipped = true
		})),
		KMS: NewKMSClient(kms.NewFromConfig(awsCfg, func(o *kms.Options) {
			if u := ep("kms"); u != nil {
				o.BaseEndpoint = u
			}
		})),
		SageMaker: NewSageMakerClient(sagemaker.NewFromConfig(awsCfg, func(o *sagemaker.Options) {
			if u := ep("sagemaker"); u != nil {
				o.BaseEndpoint = u
			}
		})),
		SSM: NewSSMClient(ssm.NewFromConfig(awsCfg, func(o *ssm.Options) {
			if u := ep("ssm"); u != nil {
				o.BaseEndpoint = u
			}
		})),
		STS: NewSTSClient(sts.NewFromConfig(awsCfg, func(o *sts.Options) {
			if u := ep("sts"); u != nil {
				o.BaseEndpoint = u
			}
		})),
		AutoScaling: NewAutoScalingClient(autoscaling.NewFromConfig(awsCfg, func(o *autoscaling.Options) {
			if u := ep("autoscaling"); u != nil {
				o.BaseEndpoint = u
			}
		})),
		AppAutoScaling: NewAppAutoScalingClient(applicationautoscaling.NewFromConfig(awsCfg, func(o *applicationautoscaling.Options) {
			if u := ep("applicationautoscaling"); u != nil {
				o.BaseEndpoint = u
			}
		})),
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
		Region:      region,
		AWS:         cfg,
		cwEndpoint:  c.cwEndpoint,
		smEndpoint:  c.smEndpoint,
		eksEndpoint: c.eksEndpoint,
		iamEndpoint: c.iamEndpoint,
		EC2:         NewEC2Client(ec2.NewFromConfig(cfg, func(o *ec2.Options) { *o = c.EC2.Options(); o.Region = region })),
		S3:          NewS3Client(s3.NewFromConfig(cfg, func(o *s3.Options) { *o = c.S3.Options(); o.Region = region })),
		KMS:         NewKMSClient(kms.NewFromConfig(cfg, func(o *kms.Options) { *o = c.KMS.Options(); o.Region = region })),
		SageMaker:   NewSageMakerClient(sagemaker.NewFromConfig(cfg, func(o *sagemaker.Options) { *o = c.SageMaker.Options(); o.Region = region })),
		SSM:         NewSSMClient(ssm.NewFromConfig(cfg, func(o *ssm.Options) { *o = c.SSM.Options(); o.Region = region })),
		STS:         NewSTSClient(sts.NewFromConfig(cfg, func(o *sts.Options) { *o = c.STS.Options(); o.Region = region })),
		AutoScaling: NewAutoScalingClient(autoscaling.NewFromConfig(cfg, func(o *autoscaling.Options) { *o = c.AutoScaling.Options(); o.Region = region })),
		AppAutoScaling: NewAppAutoScalingClient(applicationautoscaling.NewFromConfig(cfg, func(o *applicationautoscaling.Options) {
			*o = c.AppAutoScaling.Options()
			o.Region = region
		})),
	}
}
