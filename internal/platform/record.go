package platform

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// RecordTimeout bounds the lookup that records what exists of a GPU cluster
// after a failure.
const RecordTimeout = 30 * time.Second

// recordContext is the context for recording what exists after a failure:
// ctx's values without its cancellation (ctx may be the cancelled or expired
// one that caused the failure), bounded by d.
func recordContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// landingRecheck is how a SageMaker create whose answer was lost (the
// call may still be in flight) is looked for again: after a second, then
// after two more. landingRecheckNodes is the same for a GPU cluster's
// launch: every two seconds, at most three times. These are windows for a
// call under way to land, not polls of a state: they are the same against
// an emulator (whose fault tests hold a call for up to half a second), so
// they are not part of Polling.
func landingRecheck() Poll      { return Poll{Interval: time.Second, Max: 2 * time.Second} }
func landingRecheckNodes() Poll { return Poll{Interval: 2 * time.Second} }

// NewCreationToken returns a random creation token: the tag value by which a
// resource proves it created what it finds (crypto/rand never fails).
func NewCreationToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
