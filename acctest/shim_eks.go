package acctest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// EKS in the shim: the operation names of EKS's REST requests (moto
// serves clusters and node groups), and two test doubles.
//
// Test double, the cluster's API: moto gives each cluster a random
// endpoint under eks.amazonaws.com and a random certificate authority, so
// no client can reach a Kubernetes API through them. RegisterEKSAPIServer
// has DescribeCluster answer, for one cluster, the URL and CA of a real
// kube-apiserver the test runs (acctest/kubetest); the rest of the answer
// is moto's.
//
// Test double, access entries: moto 5.2.1 answers 404 for every access
// entry operation. The shim keeps them (CreateAccessEntry,
// DescribeAccessEntry, DeleteAccessEntry, ListAccessEntries) per cluster
// moto knows, with EKS's errors: ResourceInUseException (409) for a
// principal that has one, ResourceNotFoundException (404) for none or an
// unknown cluster, InvalidParameterException for a type other than
// STANDARD, EC2_LINUX or EC2_WINDOWS.

// eksAction names the EKS operation of a REST request.
func eksAction(method string, u *url.URL) string {
	parts := strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	if len(parts) == 0 || parts[0] != "clusters" {
		return ""
	}
	switch {
	case len(parts) == 1 && method == http.MethodPost:
		return "CreateCluster"
	case len(parts) == 1:
		return "ListClusters"
	case len(parts) == 2 && method == http.MethodDelete:
		return "DeleteCluster"
	case len(parts) == 2:
		return "DescribeCluster"
	case len(parts) == 3 && parts[2] == "access-entries" && method == http.MethodPost:
		return "CreateAccessEntry"
	case len(parts) == 3 && parts[2] == "access-entries":
		return "ListAccessEntries"
	case len(parts) == 4 && parts[2] == "access-entries" && method == http.MethodDelete:
		return "DeleteAccessEntry"
	case len(parts) == 4 && parts[2] == "access-entries" && method == http.MethodPost:
		return "UpdateAccessEntry"
	case len(parts) == 4 && parts[2] == "access-entries":
		return "DescribeAccessEntry"
	case len(parts) >= 3 && parts[2] == "node-groups":
		switch {
		case len(parts) == 3 && method == http.MethodPost:
			return "CreateNodegroup"
		case len(parts) == 3:
			return "ListNodegroups"
		case method == http.MethodDelete:
			return "DeleteNodegroup"
		default:
			return "DescribeNodegroup"
		}
	}
	return ""
}

// eksPathParts are the unescaped elements of an EKS request's path.
func eksPathParts(r *Request) []string {
	parts := strings.Split(strings.Trim(r.HTTP.URL.EscapedPath(), "/"), "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	return parts
}

// RegisterEKSAPIServer makes DescribeCluster of cluster answer endpoint
// and caPEM (a real kube-apiserver's URL and serving CA), and returns a
// function that removes the double.
func RegisterEKSAPIServer(s *Shim, cluster, endpoint string, caPEM []byte) (remove func()) {
	return s.HandleOver("eks", "DescribeCluster", func(w http.ResponseWriter, r *Request, next HandlerFunc) {
		parts := eksPathParts(r)
		if len(parts) != 2 || parts[1] != cluster {
			next(w, r)
			return
		}
		resp, err := r.Forward(nil)
		if err != nil {
			WriteAWSError(w, r, http.StatusBadGateway, "InternalFailure", err.Error())
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
			w.Header().Set("X-Amzn-ErrorType", resp.Header.Get("X-Amzn-ErrorType"))
			w.WriteHeader(resp.StatusCode)
			_, _ = w.Write(body)
			return
		}
		var out map[string]map[string]any
		if err := json.Unmarshal(body, &out); err != nil || out["cluster"] == nil {
			WriteAWSError(w, r, http.StatusBadGateway, "InternalFailure", fmt.Sprintf("moto's DescribeCluster answer: %v", err))
			return
		}
		out["cluster"]["endpoint"] = endpoint
		out["cluster"]["certificateAuthority"] = map[string]string{"data": base64.StdEncoding.EncodeToString(caPEM)}
		writeRESTJSON(w, out)
	})
}

// writeRESTJSON writes a successful REST-JSON answer.
func writeRESTJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-RequestId", requestID())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// EKSAccessEntry is one access entry as EKS answers it (the double's).
type EKSAccessEntry struct {
	ClusterName      string            `json:"clusterName"`
	PrincipalArn     string            `json:"principalArn"`
	KubernetesGroups []string          `json:"kubernetesGroups"`
	AccessEntryArn   string            `json:"accessEntryArn"`
	CreatedAt        float64           `json:"createdAt"`
	ModifiedAt       float64           `json:"modifiedAt"`
	Tags             map[string]string `json:"tags"`
	Username         string            `json:"username"`
	Type             string            `json:"type"`
}

// eksAccessEntries is the access entry double's store.
type eksAccessEntries struct {
	mu      sync.Mutex
	entries map[string]map[string]*EKSAccessEntry // cluster -> principal
}

// AccessEntries returns the access entries the shim keeps for cluster, by
// principal (a copy).
func (a *eksAccessEntries) list(cluster string) map[string]EKSAccessEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]EKSAccessEntry{}
	for p, e := range a.entries[cluster] {
		out[p] = *e
	}
	return out
}

// RegisterEKSAccessEntries makes the shim serve access entries; the
// returned function lists a cluster's entries by principal (for tests).
func RegisterEKSAccessEntries(s *Shim) (list func(cluster string) map[string]EKSAccessEntry) {
	a := &eksAccessEntries{entries: map[string]map[string]*EKSAccessEntry{}}
	s.OnReset(func() {
		a.mu.Lock()
		a.entries = map[string]map[string]*EKSAccessEntry{}
		a.mu.Unlock()
	})
	// clusterARN asks moto whether the cluster exists, and for its ARN.
	clusterARN := func(r *Request, name string) (string, bool) {
		out := r.HTTP.Clone(r.HTTP.Context())
		out.Method = http.MethodGet
		out.URL = &url.URL{Path: "/clusters/" + url.PathEscape(name)}
		sub := &Request{HTTP: out, shim: r.shim, Service: "eks", Protocol: ProtocolRESTJSON}
		resp, err := sub.Forward([]byte{})
		if err != nil {
			return "", false
		}
		defer resp.Body.Close()
		var d struct {
			Cluster struct {
				Arn string `json:"arn"`
			} `json:"cluster"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&d) != nil {
			return "", false
		}
		return d.Cluster.Arn, true
	}
	notFound := func(w http.ResponseWriter, r *Request, what string) {
		WriteAWSError(w, r, http.StatusNotFound, "ResourceNotFoundException", what)
	}
	s.Handle("eks", "CreateAccessEntry", func(w http.ResponseWriter, r *Request) {
		cluster := eksPathParts(r)[1]
		var in struct {
			PrincipalArn     string            `json:"principalArn"`
			KubernetesGroups []string          `json:"kubernetesGroups"`
			Tags             map[string]string `json:"tags"`
			Username         string            `json:"username"`
			Type             string            `json:"type"`
		}
		if err := r.DecodeJSON(&in); err != nil || in.PrincipalArn == "" {
			WriteAWSError(w, r, http.StatusBadRequest, "InvalidParameterException", "principalArn is required")
			return
		}
		arn, ok := clusterARN(r, cluster)
		if !ok {
			notFound(w, r, "No cluster found for name: "+cluster+".")
			return
		}
		if in.Type == "" {
			in.Type = "STANDARD"
		}
		if in.Type != "STANDARD" && in.Type != "EC2_LINUX" && in.Type != "EC2_WINDOWS" {
			WriteAWSError(w, r, http.StatusBadRequest, "InvalidParameterException", "The type "+in.Type+" is not supported.")
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.entries[cluster][in.PrincipalArn] != nil {
			WriteAWSError(w, r, http.StatusConflict, "ResourceInUseException", "The specified access entry resource is already in use on this cluster.")
			return
		}
		now := float64(time.Now().Unix())
		e := &EKSAccessEntry{ClusterName: cluster, PrincipalArn: in.PrincipalArn, KubernetesGroups: in.KubernetesGroups, Tags: in.Tags, Type: in.Type,
			CreatedAt: now, ModifiedAt: now, Username: in.Username}
		if e.Type == "EC2_LINUX" {
			e.Username, e.KubernetesGroups = "system:node:{{EC2PrivateDNSName}}", []string{"system:nodes"}
		}
		if e.Username == "" {
			e.Username = in.PrincipalArn
		}
		e.AccessEntryArn = strings.Replace(arn, ":cluster/", ":access-entry/", 1) + "/" + requestID()[:12]
		if a.entries[cluster] == nil {
			a.entries[cluster] = map[string]*EKSAccessEntry{}
		}
		a.entries[cluster][in.PrincipalArn] = e
		writeRESTJSON(w, map[string]any{"accessEntry": e})
	})
	find := func(w http.ResponseWriter, r *Request) (*EKSAccessEntry, string, string, bool) {
		parts := eksPathParts(r)
		cluster, principal := parts[1], parts[3]
		e := a.entries[cluster][principal]
		if e == nil {
			if _, ok := clusterARN(r, cluster); !ok {
				notFound(w, r, "No cluster found for name: "+cluster+".")
			} else {
				notFound(w, r, "The specified principalArn could not be found. You can view your available access entries with 'list-access-entries'.")
			}
			return nil, "", "", false
		}
		return e, cluster, principal, true
	}
	s.Handle("eks", "DescribeAccessEntry", func(w http.ResponseWriter, r *Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if e, _, _, ok := find(w, r); ok {
			writeRESTJSON(w, map[string]any{"accessEntry": e})
		}
	})
	s.Handle("eks", "DeleteAccessEntry", func(w http.ResponseWriter, r *Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if _, cluster, principal, ok := find(w, r); ok {
			delete(a.entries[cluster], principal)
			writeRESTJSON(w, map[string]any{})
		}
	})
	s.Handle("eks", "ListAccessEntries", func(w http.ResponseWriter, r *Request) {
		cluster := eksPathParts(r)[1]
		if _, ok := clusterARN(r, cluster); !ok {
			notFound(w, r, "No cluster found for name: "+cluster+".")
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		arns := []string{}
		for p := range a.entries[cluster] {
			arns = append(arns, p)
		}
		writeRESTJSON(w, map[string]any{"accessEntries": arns})
	})
	return a.list
}

// CreateEKSCluster creates an EKS cluster in moto (ACTIVE at once), with
// the harness's fixture clients.
func (h *Harness) CreateEKSCluster(ctx context.Context, name string) error {
	c, err := h.Clients(ctx, Region)
	if err != nil {
		return err
	}
	_, err = cloud.EKSSDK(c.EKS()).CreateCluster(ctx, &eks.CreateClusterInput{Name: aws.String(name), RoleArn: aws.String("arn:aws:iam::123456789012:role/eks-cluster"),
		ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: []string{"subnet-0123456789abcdef0"}}})
	if err != nil {
		return fmt.Errorf("creating EKS cluster %s in moto: %w", name, err)
	}
	return nil
}

// CreateInstanceProfile creates, in moto's IAM, role and an instance
// profile of the same name holding it; it returns the role's ARN.
func (h *Harness) CreateInstanceProfile(ctx context.Context, name string) (string, error) {
	c, err := h.Clients(ctx, Region)
	if err != nil {
		return "", err
	}
	api := cloud.IAMSDK(c.IAM())
	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`
	role, err := api.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String(name), AssumeRolePolicyDocument: aws.String(trust)})
	if err != nil {
		return "", fmt.Errorf("creating role %s in moto: %w", name, err)
	}
	if _, err := api.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil {
		return "", fmt.Errorf("creating instance profile %s in moto: %w", name, err)
	}
	if _, err := api.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(name)}); err != nil {
		return "", fmt.Errorf("adding role %s to its instance profile: %w", name, err)
	}
	return aws.ToString(role.Role.Arn), nil
}

// CreateAccessEntry creates an access entry in the shim's double, as
// someone other than the provider would (a fixture call).
func (h *Harness) CreateAccessEntry(ctx context.Context, cluster, principal, typ string) error {
	c, err := h.Clients(ctx, Region)
	if err != nil {
		return err
	}
	_, err = cloud.EKSSDK(c.EKS()).CreateAccessEntry(ctx, &eks.CreateAccessEntryInput{ClusterName: aws.String(cluster), PrincipalArn: aws.String(principal), Type: aws.String(typ)})
	return err
}
