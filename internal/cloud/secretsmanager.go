package cloud

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// LocatorSecretsAPI is the Secrets Manager subset the Locator calls.
type LocatorSecretsAPI interface {
	DescribeSecret(ctx context.Context, in *secretsmanager.DescribeSecretInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.DescribeSecretOutput, error)
}

// SecretsManager returns the Secrets Manager client, built on first use:
// only Slurm joins (the munge key's secret) need it.
func (c *Clients) SecretsManager() SecretsManagerClient {
	c.smOnce.Do(func() {
		c.sm = NewSecretsManagerClient(secretsmanager.NewFromConfig(c.AWS, func(o *secretsmanager.Options) {
			if c.smEndpoint != "" {
				o.BaseEndpoint = aws.String(c.smEndpoint)
			}
		}))
	})
	return c.sm
}

// DescribeSecret tells where a secret is kept: its region (the ARN's), the
// KMS key that encrypts it (empty: Secrets Manager's AWS managed key), and
// the regions it is replicated to. It is asked in the secret's region.
func (l *Locator) DescribeSecret(ctx context.Context, secretARN string) (residency.SecretInfo, error) {
	region := l.region
	if a, err := residency.ParseARN(secretARN); err == nil && a.Region != "" {
		region = a.Region
	}
	out, err := l.secrets(region).DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(secretARN)})
	if err != nil {
		return residency.SecretInfo{}, fmt.Errorf("describing secret %q: %w", secretARN, classify(err))
	}
	info := residency.SecretInfo{ARN: aws.ToString(out.ARN), Region: region, KMSKeyID: aws.ToString(out.KmsKeyId)}
	for _, r := range out.ReplicationStatus {
		if rr := aws.ToString(r.Region); rr != "" && rr != region && !slices.Contains(info.ReplicaRegions, rr) {
			info.ReplicaRegions = append(info.ReplicaRegions, rr)
		}
	}
	return info, nil
}
