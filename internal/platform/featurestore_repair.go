package platform

import (
	"context"
	"errors"
	"fmt"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// Feature group statuses (FeatureGroupStatus).
const (
	FeatureStoreCreating     = "Creating"
	FeatureStoreCreated      = "Created"
	FeatureStoreCreateFailed = "CreateFailed"
	FeatureStoreDeleting     = "Deleting"
	FeatureStoreDeleteFailed = "DeleteFailed"
)

// FeatureStoreRepairPlan says what a plan does about a recorded group that is
// not healthy (not Created).
type FeatureStoreRepairPlan struct {
	// Finish: the group is still being created (an earlier apply was
	// interrupted or timed out); the next update waits for it in place.
	Finish bool
	// Replace: the group cannot be repaired in place and the user allowed a
	// destructive change; the plan replaces it. Reason says why.
	Replace bool
	Reason  string
	// Blocked, when not empty, is an error for the plan: what is wrong and
	// what to do.
	Blocked string
}

// FeatureStoreRepair decides what to do with a group recorded with status
// (and SageMaker's failure reason), so that drift shows in the plan: a group
// being created is finished in place; a group whose creation failed is
// replaced only with allowDestructive, otherwise the plan fails saying what
// to do; a failed deletion is reported. Created (or an unknown status) needs
// nothing.
func FeatureStoreRepair(status, reason string, allowDestructive bool) FeatureStoreRepairPlan {
	if reason == "" {
		reason = "no reason given"
	}
	switch status {
	case FeatureStoreCreating, "Unknown":
		return FeatureStoreRepairPlan{Finish: true, Reason: "the feature group is still being created; apply waits for it in place"}
	case FeatureStoreCreateFailed:
		why := fmt.Sprintf("SageMaker failed to create the feature group (CreateFailed: %s); it cannot be repaired in place", reason)
		if allowDestructive {
			return FeatureStoreRepairPlan{Replace: true, Reason: why + "; it is deleted and created again"}
		}
		return FeatureStoreRepairPlan{Blocked: why + ". Fix the cause, then either set allow_destructive_changes = true to have it deleted and created again " +
			"(a group that failed to create holds no records), or destroy it (terraform destroy -target, pulumi destroy --target) and apply again"}
	case FeatureStoreDeleteFailed:
		return FeatureStoreRepairPlan{Blocked: fmt.Sprintf("the feature group's deletion failed (DeleteFailed: %s); it still exists. "+
			"Fix the cause and destroy it again (terraform destroy -target, pulumi destroy --target), or delete it outside and refresh", reason)}
	case FeatureStoreDeleting:
		return FeatureStoreRepairPlan{Blocked: "the feature group is being deleted outside this configuration. Wait for the deletion to finish and plan again: " +
			"a group gone is planned for creation anew (its data is lost with the deletion); a failed deletion is reported"}
	}
	return FeatureStoreRepairPlan{}
}

// CheckFeatureStoreAbsent is the plan-time check before a group is created
// under name: Terraform plans a create both for a new resource and to
// replace one it marked tainted after a failed apply, and cannot tell the
// provider which. When a group of the name exists, the create would either
// delete it first (taint) or fail (not in state): without allowDestructive
// the plan is refused with what to do. With it, the returned warning says the
// group will be replaced. A group that does not exist gives neither.
func (e *Env) CheckFeatureStoreAbsent(ctx context.Context, name string, allowDestructive bool) (warning string, err error) {
	fs, err := e.FindFeatureStore(ctx, name)
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("checking whether feature group %s exists before creating it: %w", name, err)
	}
	if allowDestructive {
		return fmt.Sprintf("Feature group %q exists (%s, %s). Where this plan replaces it (allow_destructive_changes = true), it is DELETED and created again, "+
			"losing every record in its online store; where it is not recorded here, the create fails unless this resource created it.", name, fs.Status, fs.ARN), nil
	}
	return "", fmt.Errorf("%w: %q (%s, %s). If it is this resource, marked tainted after a failed or interrupted apply, "+
		"replacing it would delete it and lose its data: untaint it (`terraform untaint ADDRESS`, `pulumi state untaint URN`) and apply again, "+
		"which finishes it in place, or set allow_destructive_changes = true to replace it. If it is not recorded in this state, import it "+
		"(`terraform import ADDRESS %s`, `pulumi import`), or choose another name", ErrFeatureStoreExists, name, fs.Status, fs.ARN, name)
}
