package pulumi

import (
	"context"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
)

type (
	unknownInputsKey struct{}
	customTimeoutKey struct{}
)

// withRequestDetails hands the resources what infer's typed requests leave
// out: to Diff, the paths of the new inputs not known yet (infer decodes
// them as zero values, which would read as absent); to Create, Update and
// Delete, the program's custom timeout.
func withRequestDetails(prov p.Provider) p.Provider {
	diff, create, update, del := prov.Diff, prov.Create, prov.Update, prov.Delete
	prov.Diff = func(ctx context.Context, req p.DiffRequest) (p.DiffResponse, error) {
		return diff(context.WithValue(ctx, unknownInputsKey{}, gpuClusterUnknowns(req.Inputs)), req)
	}
	prov.Create = func(ctx context.Context, req p.CreateRequest) (p.CreateResponse, error) {
		return create(withCustomTimeout(ctx, req.Timeout), req)
	}
	prov.Update = func(ctx context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
		return update(withCustomTimeout(ctx, req.Timeout), req)
	}
	prov.Delete = func(ctx context.Context, req p.DeleteRequest) error {
		return del(withCustomTimeout(ctx, req.Timeout), req)
	}
	return prov
}

func withCustomTimeout(ctx context.Context, seconds float64) context.Context {
	if seconds <= 0 {
		return ctx
	}
	return context.WithValue(ctx, customTimeoutKey{}, time.Duration(seconds*float64(time.Second)))
}

// unknownInputs are the paths withUnknownInputs found.
func unknownInputs(ctx context.Context) []string {
	u, _ := ctx.Value(unknownInputsKey{}).([]string)
	return u
}
