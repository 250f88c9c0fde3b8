package cloud

import (
	"context"
	"errors"
	"fmt"
)

// WaitServingEndpoint polls until the endpoint leaves the transitional
// states (Creating, Updating, SystemUpdating, RollingBack) and returns it as
// it settled. Failed is an error carrying SageMaker's failure reason; an
// endpoint back InService after an update is not: whether the update took
// is for the caller to tell from the endpoint's config name.
func WaitServingEndpoint(ctx context.Context, api ServingAPI, name string, opts WaitOptions) (*ServingEndpointInfo, error) {
	var e *ServingEndpointInfo
	err := pollStatus(ctx, opts, "endpoint "+name, func(ctx context.Context) (string, bool, error) {
		var err error
		e, err = FindServingEndpoint(ctx, api, name)
		if err != nil {
			return "", true, err
		}
		switch e.Status {
		case EndpointInService:
			return e.Status, true, nil
		case EndpointCreating, EndpointUpdating, EndpointSystemUpdating, EndpointRollingBack, "":
			return e.Status, false, nil
		case EndpointFailed, EndpointUpdateRollback:
			return e.Status, true, fmt.Errorf("endpoint %s is %s: %s", name, e.Status, failureReason(e.FailureReason))
		default:
			return e.Status, true, fmt.Errorf("endpoint %s is %s while waiting for it to be in service: %s", name, e.Status, failureReason(e.FailureReason))
		}
	})
	return e, err
}

// WaitServingEndpointDeleted polls until the endpoint is gone.
func WaitServingEndpointDeleted(ctx context.Context, api ServingAPI, name string, opts WaitOptions) error {
	return pollStatus(ctx, opts, "deletion of endpoint "+name, func(ctx context.Context) (string, bool, error) {
		e, err := FindServingEndpoint(ctx, api, name)
		if errors.Is(err, ErrNotFound) {
			return "Deleted", true, nil
		}
		if err != nil {
			return "", false, err
		}
		return e.Status, false, nil
	})
}
