package pulumi

import (
	"context"
	"testing"
	"time"
)

// Every resource's waits follow one rule: the program's custom timeout when
// it set one, else the core's default.
func TestTimeoutOr(t *testing.T) {
	bg := context.Background()
	if got := timeoutOr(bg, 20*time.Minute); got != 20*time.Minute {
		t.Errorf("no custom timeout: %v, want the default 20m", got)
	}
	custom := withCustomTimeout(bg, 90)
	if got := timeoutOr(custom, 20*time.Minute); got != 90*time.Second {
		t.Errorf("custom 90s: %v, want 90s", got)
	}
	if got := timeoutOr(withCustomTimeout(bg, 0), time.Minute); got != time.Minute {
		t.Errorf("custom 0 (unset): %v, want the default", got)
	}
	if w := servingWait(custom, "e", "create", time.Hour); w.Timeout != 90*time.Second {
		t.Errorf("serving wait with custom 90s: %v", w.Timeout)
	}
	ctx, cancel := cpuFootprintDeadline(custom, time.Hour)
	defer cancel()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > 90*time.Second || time.Until(dl) < 80*time.Second {
		t.Errorf("footprint with custom 90s: deadline in %v (set %v)", time.Until(dl), ok)
	}
}
