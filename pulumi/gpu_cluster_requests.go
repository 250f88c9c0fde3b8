package pulumi

import (
	"context"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
)

type customTimeoutKey struct{}

// withRequestDetails hands Create, Update and Delete what infer's typed
// requests leave out: the program's custom timeout. (Diff gets the unknown
// input paths from withUnknownInputs.)
func withRequestDetails(prov p.Provider) p.Provider {
	create, update, del := prov.Create, prov.Update, prov.Delete
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

// timeoutOr is the program's custom timeout for this operation when it set
// one, else def (the core's default): every resource's waits follow this
// one rule.
func timeoutOr(ctx context.Context, def time.Duration) time.Duration {
	if explicit, _ := ctx.Value(customTimeoutKey{}).(time.Duration); explicit > 0 {
		return explicit
	}
	return def
}
