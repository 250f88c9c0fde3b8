package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
)

// A self-managed Kubernetes cluster (orchestrator.kubernetes): the gate
// reaches its API with the credentials of a kubeconfig kept in Secrets
// Manager. The kubeconfig is read at plan and at apply, held in memory
// only, and never written anywhere.

// SecretValueAPI is the Secrets Manager call that reads a secret.
type SecretValueAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, o ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// MaxKubeconfigSize bounds the kubeconfig a secret may hold (Secrets
// Manager's own limit is 64 KiB).
const MaxKubeconfigSize = 64 << 10

// GetSecretValue returns the secret's current value (its string, else its
// binary). Its errors never carry the value.
func GetSecretValue(ctx context.Context, api SecretValueAPI, secretARN string) ([]byte, error) {
	out, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretARN)})
	if err != nil {
		return nil, fmt.Errorf("reading secret %s: %w", secretARN, classifyNotFound(err))
	}
	if out.SecretString != nil {
		return []byte(*out.SecretString), nil
	}
	return out.SecretBinary, nil
}

// classifyNotFound maps Secrets Manager's not-found answer to ErrNotFound.
func classifyNotFound(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "ResourceNotFoundException" {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

// KubeconfigError is a kubeconfig the provider cannot use. Field names
// the part of the kubeconfig at fault; the message never carries a
// credential.
type KubeconfigError struct {
	// Unsupported is set for a kubeconfig that is well formed but asks for
	// what the provider does not do (an exec or auth-provider user,
	// credentials in files, no TLS).
	Unsupported bool
	Msg         string
}

func (e *KubeconfigError) Error() string { return e.Msg }

// Kubeconfig is what the gate uses of a kubeconfig: the server of the
// chosen context's cluster and the credentials of its user.
type Kubeconfig struct {
	// Context is the context used: the one asked for, else the current
	// context.
	Context string
	Access  KubeAccess
}

// ParseKubeconfig reads a kubeconfig (YAML or JSON) and picks context
// (default: its current-context). The cluster needs an https server and
// its certificate authority embedded (certificate-authority-data); the
// user a token, or a client certificate and key, embedded. An exec or
// auth-provider user, credentials or a CA in files, insecure-skip-tls-verify
// and a proxy are refused: the provider runs no command, reads no file of
// the machine it runs on, and calls the server itself.
func ParseKubeconfig(data []byte, context string) (Kubeconfig, error) {
	bad := func(unsupported bool, format string, args ...any) (Kubeconfig, error) {
		return Kubeconfig{}, &KubeconfigError{Unsupported: unsupported, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) == 0 {
		return bad(false, "the secret is empty: it must hold a kubeconfig")
	}
	if len(data) > MaxKubeconfigSize {
		return bad(false, "the secret holds %d bytes: a kubeconfig of at most %d is expected", len(data), MaxKubeconfigSize)
	}
	cfg, err := loadKubeconfig(data)
	if err != nil {
		// The decoder's message may quote the document: not shown.
		return bad(false, "the secret does not hold a kubeconfig (YAML or JSON with clusters, users and contexts)")
	}
	name := context
	if name == "" {
		name = cfg.CurrentContext
	}
	if name == "" {
		return bad(false, "the kubeconfig has no current-context: name one with context")
	}
	kc, ok := cfg.Contexts[name]
	if !ok || kc == nil {
		return bad(false, "the kubeconfig has no context %q", name)
	}
	cl, ok := cfg.Clusters[kc.Cluster]
	if !ok || cl == nil {
		return bad(false, "context %q names cluster %q, which the kubeconfig does not have", name, kc.Cluster)
	}
	u, ok := cfg.AuthInfos[kc.AuthInfo]
	if !ok || u == nil {
		return bad(false, "context %q names user %q, which the kubeconfig does not have", name, kc.AuthInfo)
	}
	server, err := url.Parse(cl.Server)
	switch {
	case cl.Server == "":
		return bad(false, "cluster %q has no server", kc.Cluster)
	case err != nil || server.Host == "" || server.Hostname() == "":
		return bad(false, "cluster %q: server %q is not a URL", kc.Cluster, cl.Server)
	case server.Scheme != "https":
		return bad(true, "cluster %q: server %q is not https: the gate's credentials would cross the network in clear", kc.Cluster, cl.Server)
	case server.User != nil:
		return bad(true, "cluster %q: the server URL carries user information: give credentials in the user instead", kc.Cluster)
	case cl.InsecureSkipTLSVerify:
		return bad(true, "cluster %q: insecure-skip-tls-verify is refused: give the cluster's certificate-authority-data", kc.Cluster)
	case cl.ProxyURL != "":
		return bad(true, "cluster %q: proxy-url is refused: the provider calls the server directly", kc.Cluster)
	case cl.CertificateAuthority != "" && len(cl.CertificateAuthorityData) == 0:
		return bad(true, "cluster %q: certificate-authority names a file: embed it as certificate-authority-data (the provider reads no file)", kc.Cluster)
	case len(cl.CertificateAuthorityData) == 0:
		return bad(false, "cluster %q has no certificate-authority-data: the server's certificate could not be verified", kc.Cluster)
	}
	switch {
	case u.Exec != nil:
		return bad(true, "user %q runs a command (exec: %s) for its credentials: the provider runs no command. Give a token or a client certificate and key", kc.AuthInfo, u.Exec.Command)
	case u.AuthProvider != nil:
		return bad(true, "user %q uses auth-provider %q: the provider runs no plugin. Give a token or a client certificate and key", kc.AuthInfo, u.AuthProvider.Name)
	case u.TokenFile != "" || u.ClientCertificate != "" || u.ClientKey != "":
		return bad(true, "user %q names files (tokenFile, client-certificate or client-key): embed them (token, client-certificate-data, client-key-data; the provider reads no file)", kc.AuthInfo)
	case u.Username != "" || u.Password != "":
		return bad(true, "user %q has a username and password: Kubernetes no longer authenticates them. Give a token or a client certificate and key", kc.AuthInfo)
	case u.Impersonate != "" || len(u.ImpersonateGroups) > 0 || len(u.ImpersonateUserExtra) > 0 || u.ImpersonateUID != "":
		return bad(true, "user %q impersonates another: give the gate's own identity", kc.AuthInfo)
	case (len(u.ClientCertificateData) > 0) != (len(u.ClientKeyData) > 0):
		return bad(false, "user %q has a client certificate without its key, or a key without its certificate", kc.AuthInfo)
	case u.Token == "" && len(u.ClientCertificateData) == 0:
		return bad(false, "user %q has no credentials: give a token, or client-certificate-data and client-key-data", kc.AuthInfo)
	}
	return Kubeconfig{Context: name, Access: KubeAccess{
		Endpoint: strings.TrimSuffix(cl.Server, "/"), CAPEM: cl.CertificateAuthorityData, ServerName: cl.TLSServerName,
		Token: u.Token, CertPEM: u.ClientCertificateData, KeyPEM: u.ClientKeyData,
	}}, nil
}

// VPCsAPI is the EC2 call that lists VPCs.
type VPCsAPI interface {
	DescribeVpcs(ctx context.Context, in *ec2.DescribeVpcsInput, o ...func(*ec2.Options)) (*ec2.DescribeVpcsOutput, error)
}

// VPCPrefix is one CIDR block of a VPC.
type VPCPrefix struct {
	VPCID  string
	Prefix netip.Prefix
}

// VPCPrefixes lists the CIDR blocks (IPv4 and IPv6, associated) of every
// VPC the client's region has.
func VPCPrefixes(ctx context.Context, api VPCsAPI) ([]VPCPrefix, error) {
	var out []VPCPrefix
	p := ec2.NewDescribeVpcsPaginator(api, &ec2.DescribeVpcsInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing VPCs: %w", err)
		}
		for _, v := range page.Vpcs {
			id := aws.ToString(v.VpcId)
			blocks := []string{aws.ToString(v.CidrBlock)}
			for _, a := range v.CidrBlockAssociationSet {
				if a.CidrBlockState == nil || a.CidrBlockState.State == "associated" {
					blocks = append(blocks, aws.ToString(a.CidrBlock))
				}
			}
			for _, a := range v.Ipv6CidrBlockAssociationSet {
				if a.Ipv6CidrBlockState == nil || a.Ipv6CidrBlockState.State == "associated" {
					blocks = append(blocks, aws.ToString(a.Ipv6CidrBlock))
				}
			}
			for _, b := range blocks {
				if pfx, err := netip.ParsePrefix(b); err == nil {
					out = append(out, VPCPrefix{VPCID: id, Prefix: pfx.Masked()})
				}
			}
		}
	}
	return out, nil
}

// errNoKubeconfig guards NewKubeNodes's use below.
var errNoKubeconfig = errors.New("no kubeconfig")

// NewKubeNodesFromKubeconfig makes the gate's client from a parsed
// kubeconfig.
func NewKubeNodesFromKubeconfig(k *Kubeconfig) (*KubeNodes, error) {
	if k == nil || k.Access.Endpoint == "" {
		return nil, errNoKubeconfig
	}
	return NewKubeNodes(k.Access)
}

// loadKubeconfig decodes a kubeconfig as clientcmd.Load does, with
// clientcmd's own codec (the clientcmd package itself links its loading
// rules, file merging and interactive prompts, which the provider does
// not use).
func loadKubeconfig(data []byte) (*clientcmdapi.Config, error) {
	decoded, _, err := clientcmdlatest.Codec.Decode(data, &schema.GroupVersionKind{Version: clientcmdlatest.Version, Kind: "Config"}, clientcmdapi.NewConfig())
	if err != nil {
		return nil, err
	}
	cfg, ok := decoded.(*clientcmdapi.Config)
	if !ok {
		return nil, fmt.Errorf("decoded a %T", decoded)
	}
	return cfg, nil
}
