// Package residency is the data-residency engine: jurisdictions, the effective
// policy, and the rules, as pure functions over references taken from planned
// values. AWS is reached only through the narrow Locator interface.
package residency

import (
	"context"
	"fmt"
)

// Mode says what a violation does to a plan.
type Mode string

const (
	// ModeEnforce turns violations into errors: nothing is created.
	ModeEnforce Mode = "enforce"
	// ModeAudit turns violations into warnings.
	ModeAudit Mode = "audit"
)

// Kind is what a reference points at, and so which rules apply to it.
type Kind string

const (
	KindRegion   Kind = "region"    // an AWS region name
	KindZone     Kind = "zone"      // an availability zone name, e.g. me-central-1a
	KindZoneID   Kind = "zone_id"   // an availability zone id, e.g. mec1-az1
	KindKMSKey   Kind = "kms_key"   // a KMS key ARN (or alias ARN)
	KindS3URI    Kind = "s3_uri"    // s3://bucket/prefix
	KindECRImage Kind = "ecr_image" // ACCOUNT.dkr.ecr.REGION.amazonaws.com/repo[:tag|@digest]
	KindARN      Kind = "arn"       // any ARN: its partition and region must be allowed; keys and buckets are resolved
	KindImage    Kind = "image"     // an AMI id, AMI ARN, or SSM parameter (name or ARN, with or without resolve:ssm:) holding one
	KindSecret   Kind = "secret"    // a Secrets Manager secret ARN: its region, replicas and KMS key
)

// Ref is one referenced location taken from a planned resource.
type Ref struct {
	Path  string // attribute path as the user wrote it, e.g. offline_store.s3_uri or kms_key_arns[1]
	Kind  Kind
	Value string
	// Required makes an empty value a violation. Without it an empty value
	// (an unset optional attribute) refers to nothing and is skipped. A
	// blank value (spaces only) is a violation either way.
	Required bool
	// DefaultKey marks a KMS key attribute whose empty value means the AWS
	// managed default key: empty is then a violation when the policy
	// requires customer managed keys.
	DefaultKey bool
}

// Violation is one broken rule. Every violation names the attribute path, the
// value, the rule and the fix.
type Violation struct {
	Path  string
	Value string
	Rule  string // stable rule id, e.g. "region-allowed", "kms-key-region"
	Msg   string // what is wrong, in words
	Fix   string // how to fix it, in words
}

func (v Violation) Error() string {
	return fmt.Sprintf("%s = %q breaks residency rule %s: %s. Fix: %s", v.Path, v.Value, v.Rule, v.Msg, v.Fix)
}

// KeyInfo is what the engine needs to know about a KMS key.
type KeyInfo struct {
	// ARN is the key's own ARN: for an alias, the key it points to.
	ARN             string
	Region          string
	CustomerManaged bool
	// MultiRegion says the key is a multi-region key (primary or replica).
	MultiRegion bool
	// ReplicaRegions are the other regions a multi-region key has copies
	// in (its primary and replicas, less Region); empty for single-region keys.
	ReplicaRegions []string
}

// SecretInfo is what the engine needs to know about a Secrets Manager
// secret.
type SecretInfo struct {
	ARN    string
	Region string
	// KMSKeyID is the key that encrypts the secret (an id, ARN or alias);
	// empty means Secrets Manager's AWS managed key (aws/secretsmanager).
	KMSKeyID string
	// ReplicaRegions are the regions the secret is replicated to.
	ReplicaRegions []string
}

// SecretLocator describes secrets. A Locator that cannot (the review CLI's,
// which reads plans) leaves secret references unverifiable.
type SecretLocator interface {
	DescribeSecret(ctx context.Context, secretARN string) (SecretInfo, error)
}

// Locator answers the questions the rules need from AWS. It is declared here,
// by its consumer, and implemented in internal/cloud (and by fakes in tests).
type Locator interface {
	// BucketRegion returns the region a bucket lives in (GetBucketLocation).
	BucketRegion(ctx context.Context, bucket string) (string, error)
	// BucketReplicationRegions returns the destination regions of the bucket's
	// replication rules; none when replication is not configured.
	BucketReplicationRegions(ctx context.Context, bucket string) ([]string, error)
	// ZoneID resolves a zone name in region to its zone id (DescribeAvailabilityZones).
	ZoneID(ctx context.Context, region, zoneName string) (string, error)
	// DescribeKey tells where a key lives and who manages it. Given an alias
	// (name or ARN) it describes the key the alias points to.
	DescribeKey(ctx context.Context, keyARN string) (KeyInfo, error)
}
