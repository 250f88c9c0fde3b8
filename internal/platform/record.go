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

// NewCreationToken returns a random creation token: the tag value by which a
// resource proves it created what it finds (crypto/rand never fails).
func NewCreationToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
