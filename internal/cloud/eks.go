package cloud

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// EKS: the cluster a resource's nodes join (orchestrator.eks), the access
// entry the resource owns for its nodes' role, and the token the gate
// calls the cluster's Kubernetes API with.

// EKS returns the EKS client, built on first use: only resources that
// join EKS need it.
func (c *Clients) EKS() EKSClient {
	c.eksOnce.Do(func() {
		c.eks = NewEKSClient(eks.NewFromConfig(c.AWS, func(o *eks.Options) {
			if c.eksEndpoint != "" {
				o.BaseEndpoint = aws.String(c.eksEndpoint)
			}
		}))
	})
	return c.eks
}

// IAM returns the IAM client, built on first use: the instance profile's
// role (an EKS access entry's principal).
func (c *Clients) IAM() IAMClient {
	c.iamOnce.Do(func() {
		c.iam = NewIAMClient(iam.NewFromConfig(c.AWS, func(o *iam.Options) {
			if c.iamEndpoint != "" {
				o.BaseEndpoint = aws.String(c.iamEndpoint)
			}
		}))
	})
	return c.iam
}

// EKSCluster is what nodes and the gate need of an EKS cluster.
type EKSCluster struct {
	Name, ARN, Status, Version string
	// Endpoint is the Kubernetes API server's URL.
	Endpoint string
	// CertificateAuthority is the API server's CA, base64 of PEM, as EKS
	// gives it (nodeadm's NodeConfig takes it so).
	CertificateAuthority string
	// ServiceCIDR is the Kubernetes service network (IPv4, else IPv6).
	ServiceCIDR string
	// AuthenticationMode: API, API_AND_CONFIG_MAP or CONFIG_MAP.
	AuthenticationMode string
}

// EKSDescribeAPI is the EKS subset DescribeEKSCluster calls.
type EKSDescribeAPI interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, o ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// DescribeEKSCluster reads a cluster; ErrNotFound when there is none of
// that name in the client's region.
func DescribeEKSCluster(ctx context.Context, api EKSDescribeAPI, name string) (EKSCluster, error) {
	out, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(name)})
	if err != nil {
		var nf *ekstypes.ResourceNotFoundException
		if errors.As(err, &nf) {
			return EKSCluster{}, fmt.Errorf("EKS cluster %q: %w", name, ErrNotFound)
		}
		return EKSCluster{}, fmt.Errorf("describing EKS cluster %q: %w", name, classify(err))
	}
	c := out.Cluster
	if c == nil {
		return EKSCluster{}, fmt.Errorf("describing EKS cluster %q: empty answer", name)
	}
	r := EKSCluster{Name: aws.ToString(c.Name), ARN: aws.ToString(c.Arn), Status: string(c.Status), Version: aws.ToString(c.Version), Endpoint: aws.ToString(c.Endpoint)}
	if c.CertificateAuthority != nil {
		r.CertificateAuthority = aws.ToString(c.CertificateAuthority.Data)
	}
	if n := c.KubernetesNetworkConfig; n != nil {
		r.ServiceCIDR = aws.ToString(n.ServiceIpv4Cidr)
		if r.ServiceCIDR == "" {
			r.ServiceCIDR = aws.ToString(n.ServiceIpv6Cidr)
		}
	}
	if c.AccessConfig != nil {
		r.AuthenticationMode = string(c.AccessConfig.AuthenticationMode)
	}
	return r, nil
}

// AccessEntry is an EKS access entry: a principal's way into a cluster.
type AccessEntry struct {
	Cluster, PrincipalARN, Type, Username string
	Tags                                  map[string]string
}

// EKSAccessAPI is the EKS subset the access entry verbs call.
type EKSAccessAPI interface {
	CreateAccessEntry(ctx context.Context, in *eks.CreateAccessEntryInput, o ...func(*eks.Options)) (*eks.CreateAccessEntryOutput, error)
	DescribeAccessEntry(ctx context.Context, in *eks.DescribeAccessEntryInput, o ...func(*eks.Options)) (*eks.DescribeAccessEntryOutput, error)
	DeleteAccessEntry(ctx context.Context, in *eks.DeleteAccessEntryInput, o ...func(*eks.Options)) (*eks.DeleteAccessEntryOutput, error)
}

// AccessEntryEC2Linux is the type of the entry of nodes' role: EKS maps
// it to system:node:{{EC2PrivateDNSName}} in system:nodes.
const AccessEntryEC2Linux = "EC2_LINUX"

// FindAccessEntry reads the cluster's entry for principal; ErrNotFound
// when there is none.
func FindAccessEntry(ctx context.Context, api EKSAccessAPI, cluster, principal string) (AccessEntry, error) {
	out, err := api.DescribeAccessEntry(ctx, &eks.DescribeAccessEntryInput{ClusterName: aws.String(cluster), PrincipalArn: aws.String(principal)})
	if err != nil {
		var nf *ekstypes.ResourceNotFoundException
		if errors.As(err, &nf) {
			return AccessEntry{}, fmt.Errorf("access entry of %s in EKS cluster %q: %w", principal, cluster, ErrNotFound)
		}
		return AccessEntry{}, fmt.Errorf("describing the access entry of %s in EKS cluster %q: %w", principal, cluster, classify(err))
	}
	e := out.AccessEntry
	if e == nil {
		return AccessEntry{}, fmt.Errorf("describing the access entry of %s in EKS cluster %q: empty answer", principal, cluster)
	}
	return AccessEntry{Cluster: aws.ToString(e.ClusterName), PrincipalARN: aws.ToString(e.PrincipalArn), Type: aws.ToString(e.Type),
		Username: aws.ToString(e.Username), Tags: e.Tags}, nil
}

// ErrAccessEntryExists is CreateAccessEntry's answer when the principal
// already has an entry in the cluster (ResourceInUseException).
var ErrAccessEntryExists = errors.New("access entry exists")

// CreateAccessEntry creates the EC2_LINUX entry of principal (the nodes'
// role) in cluster with tags; ErrAccessEntryExists when there is one
// already, whoever made it (a retry after a lost answer finds its own:
// the caller tells by the tags).
func CreateAccessEntry(ctx context.Context, api EKSAccessAPI, cluster, principal string, tags map[string]string) error {
	_, err := api.CreateAccessEntry(ctx, &eks.CreateAccessEntryInput{ClusterName: aws.String(cluster), PrincipalArn: aws.String(principal),
		Type: aws.String(AccessEntryEC2Linux), Tags: tags})
	if err != nil {
		var inUse *ekstypes.ResourceInUseException
		if errors.As(err, &inUse) {
			return fmt.Errorf("access entry of %s in EKS cluster %q: %w", principal, cluster, ErrAccessEntryExists)
		}
		return fmt.Errorf("creating the access entry of %s in EKS cluster %q: %w", principal, cluster, classify(err))
	}
	return nil
}

// DeleteAccessEntry deletes the cluster's entry for principal; gone
// already (or the cluster) is success.
func DeleteAccessEntry(ctx context.Context, api EKSAccessAPI, cluster, principal string) error {
	_, err := api.DeleteAccessEntry(ctx, &eks.DeleteAccessEntryInput{ClusterName: aws.String(cluster), PrincipalArn: aws.String(principal)})
	if err != nil {
		var nf *ekstypes.ResourceNotFoundException
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("deleting the access entry of %s in EKS cluster %q: %w", principal, cluster, classify(err))
	}
	return nil
}

// IAMProfileAPI is the IAM subset InstanceProfileRole calls.
type IAMProfileAPI interface {
	GetInstanceProfile(ctx context.Context, in *iam.GetInstanceProfileInput, o ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
}

// InstanceProfileRole returns the ARN of the role of an instance profile
// (a name, or an ARN whose last path element is the name).
func InstanceProfileRole(ctx context.Context, api IAMProfileAPI, profile string) (string, error) {
	name := profile
	if strings.HasPrefix(profile, "arn:") {
		name = profile[strings.LastIndexByte(profile, '/')+1:]
	}
	out, err := api.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("reading instance profile %q: %w", profile, classify(err))
	}
	if out.InstanceProfile == nil || len(out.InstanceProfile.Roles) == 0 {
		return "", fmt.Errorf("instance profile %q has no role: the nodes could not join the cluster", profile)
	}
	return aws.ToString(out.InstanceProfile.Roles[0].Arn), nil
}

// EKS tokens are what `aws eks get-token` prints: "k8s-aws-v1." and the
// base64url (unpadded) of a presigned STS GetCallerIdentity URL whose
// signature covers the header x-k8s-aws-id (the cluster's name). EKS's
// authenticator replays the request to STS to learn who signed it.
const (
	eksTokenPrefix     = "k8s-aws-v1."
	eksClusterIDHeader = "x-k8s-aws-id"
)

// EKSToken makes a bearer token for the cluster's Kubernetes API from the
// client's credentials.
func EKSToken(ctx context.Context, h STSClient, cluster string) (string, error) {
	p := sts.NewPresignClient(h.c())
	req, err := p.PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, func(o *sts.PresignOptions) {
		o.ClientOptions = append(o.ClientOptions, func(so *sts.Options) {
			so.APIOptions = append(so.APIOptions, smithyhttp.AddHeaderValue(eksClusterIDHeader, cluster), smithyhttp.AddHeaderValue("X-Amz-Expires", "60"))
		})
	})
	if err != nil {
		return "", fmt.Errorf("signing an EKS token for cluster %q: %w", cluster, err)
	}
	if req.Method != http.MethodGet {
		return "", fmt.Errorf("signing an EKS token for cluster %q: presigned %s, want GET", cluster, req.Method)
	}
	return eksTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(req.URL)), nil
}
