package platform

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// The nodes' access entry (orchestrator.eks.create_access_entry): the EKS
// access entry of type EC2_LINUX for the role of the resource's instance
// profile, which lets its nodes' kubelets in. The resource creates it
// before its nodes launch, tagged with its creation token, and records it
// on its launch template (TagEKSAccessEntry), so that a destroy that finds
// the resource by its tags finds the entry too; it deletes the entry only
// when it carries its token. An entry of the role that exists already (a
// cluster sharing the role, or the user's) is used as it is: never
// adopted, never deleted.

// TagEKSAccessEntry is the launch template tag that records the entry a
// resource created: "CLUSTER ROLE-ARN".
const TagEKSAccessEntry = cloud.ReservedTagPrefix + "eks-access-entry"

// accessEntryRef is what TagEKSAccessEntry records.
type accessEntryRef struct{ Cluster, Role string }

func (r accessEntryRef) tag() string { return r.Cluster + " " + r.Role }

func parseAccessEntryRef(tag string) (accessEntryRef, bool) {
	c, r, ok := strings.Cut(tag, " ")
	if !ok || c == "" || !strings.HasPrefix(r, "arn:") {
		return accessEntryRef{}, false
	}
	return accessEntryRef{Cluster: c, Role: r}, true
}

// accessEntryState is what the plan found of the role's entry.
const (
	accessEntryAbsent = "absent" // the apply creates it
	accessEntryOurs   = "ours"   // this resource's (its token)
	accessEntryShared = "shared" // EC2_LINUX, someone else's: used as it is
)

// planAccessEntry finds the role of the instance profile and the role's
// entry in the cluster. The problems say what cannot work.
func (e *Env) planAccessEntry(ctx context.Context, s *EKSSpec, ek *eksPlan, instanceProfile, token string, known func(string) bool) ([]Problem, error) {
	if !known("instance_profile") || !eksKnownFunc(known)(EKSPath+".create_access_entry") {
		return nil, nil
	}
	path := EKSPath + ".create_access_entry"
	if instanceProfile == "" {
		if !s.CreateAccessEntry {
			return nil, nil
		}
		return []Problem{{Path: "instance_profile", Summary: "No instance profile for the EKS nodes",
			Detail: "a node joins EKS as the role of its instance profile, whose access entry (EC2_LINUX) lets its kubelet in: set instance_profile, or set orchestrator.eks.create_access_entry = false and give the nodes' role an entry yourself."}}, nil
	}
	role, err := cloud.InstanceProfileRole(ctx, e.Clients.IAM(), instanceProfile)
	if err != nil {
		var nf interface{ ErrorCode() string }
		if errors.As(err, &nf) && nf.ErrorCode() == "NoSuchEntity" {
			return []Problem{{Path: "instance_profile", Summary: "Instance profile not found", Detail: fmt.Sprintf("%q does not exist in this account: create it, or name another.", instanceProfile)}}, nil
		}
		return nil, err
	}
	ek.NodeRole = role
	entry, err := cloud.FindAccessEntry(ctx, e.Clients.EKS(), ek.Cluster.Name, role)
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		ek.Entry = accessEntryAbsent
		if !s.CreateAccessEntry {
			return []Problem{{Path: path, Warning: true, Summary: "The nodes' role has no access entry",
				Detail: fmt.Sprintf("%s has no access entry in EKS cluster %s, and create_access_entry = false: the nodes' kubelets cannot register, and the gate will wait for them until validation.timeout. Create an EC2_LINUX entry for the role, or set create_access_entry = true.", role, ek.Cluster.Name)}}, nil
		}
		return nil, nil
	case err != nil:
		return nil, err
	}
	switch {
	case token != "" && entry.Tags[cloud.TagCreationToken] == token:
		ek.Entry = accessEntryOurs
	case entry.Type == cloud.AccessEntryEC2Linux:
		ek.Entry = accessEntryShared
	default:
		return []Problem{{Path: path, Summary: "The nodes' role has another kind of access entry",
			Detail: fmt.Sprintf("%s has a %s access entry in EKS cluster %s; nodes need EC2_LINUX (system:node:{{EC2PrivateDNSName}} in system:nodes). Use another role for the nodes (instance_profile), or replace that entry.", role, entry.Type, ek.Cluster.Name)}}, nil
	}
	return nil, nil
}

// ensureAccessEntry creates the role's entry when the plan found none (and
// create_access_entry), or finds it made by an earlier try of this apply
// (a lost answer): it is this resource's only when it carries its token.
// An entry that is not this resource's is used as it is when it is
// EC2_LINUX.
func (e *Env) ensureAccessEntry(ctx context.Context, resource string, s *EKSSpec, ek *eksPlan, tags map[string]string, token string, progress func(string, ...any)) error {
	if s == nil || !s.CreateAccessEntry || ek == nil || ek.NodeRole == "" {
		return nil
	}
	ref := &accessEntryRef{Cluster: ek.Cluster.Name, Role: ek.NodeRole}
	api := e.Clients.EKS()
	entry, err := cloud.FindAccessEntry(ctx, api, ref.Cluster, ref.Role)
	if errors.Is(err, cloud.ErrNotFound) {
		progress("%s: creating the EKS access entry (EC2_LINUX) of %s in cluster %s", resource, ref.Role, ref.Cluster)
		err = cloud.CreateAccessEntry(ctx, api, ref.Cluster, ref.Role, tags)
		if err == nil {
			return nil
		}
		if !errors.Is(err, cloud.ErrAccessEntryExists) {
			return err
		}
		// Made meanwhile: by a try whose answer was lost, or by someone
		// else. Its tags say which.
		entry, err = cloud.FindAccessEntry(ctx, api, ref.Cluster, ref.Role)
	}
	if err != nil {
		return err
	}
	switch {
	case entry.Tags[cloud.TagCreationToken] == token:
		return nil
	case entry.Type == cloud.AccessEntryEC2Linux:
		progress("%s: the EKS access entry of %s in cluster %s is not this resource's: used as it is", resource, ref.Role, ref.Cluster)
		return nil
	}
	return fmt.Errorf("%s: %s has a %s access entry in EKS cluster %s, not EC2_LINUX: its nodes could not register. Use another role for the nodes, or replace that entry", resource, ref.Role, entry.Type, ref.Cluster)
}

// deleteAccessEntry deletes the entry tag records when it carries token
// (an entry someone else made, or made again, is left alone).
func (e *Env) deleteAccessEntry(ctx context.Context, resource, tag, token string, progress func(string, ...any)) error {
	ref, ok := parseAccessEntryRef(tag)
	if !ok || token == "" {
		return nil
	}
	api := e.Clients.EKS()
	entry, err := cloud.FindAccessEntry(ctx, api, ref.Cluster, ref.Role)
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		return nil
	case err != nil:
		return err
	case entry.Tags[cloud.TagCreationToken] != token:
		progress("%s: the EKS access entry of %s in cluster %s is not this resource's any more: left alone", resource, ref.Role, ref.Cluster)
		return nil
	}
	progress("%s: deleting the EKS access entry of %s in cluster %s", resource, ref.Role, ref.Cluster)
	return cloud.DeleteAccessEntry(ctx, api, ref.Cluster, ref.Role)
}
