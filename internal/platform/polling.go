package platform

import (
	"fmt"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// Poll is how one kind of wait polls: at once, then every Interval,
// growing up to Max.
type Poll = cloud.Poll

// Polling is how every kind of wait of an environment polls (Env.Polling).
type Polling = cloud.Polling

// PollIntervalEnv, a duration such as "200ms", makes every wait poll at
// that interval instead of the intervals meant for AWS: for emulators and
// tests.
const PollIntervalEnv = "MLPLATFORM_POLL_INTERVAL"

// DefaultPolling is how the waits poll real AWS.
func DefaultPolling() Polling { return cloud.DefaultPolling() }

// PollingEvery polls every kind of wait every d (emulators, tests).
func PollingEvery(d time.Duration) Polling { return cloud.PollingEvery(d) }

// PollingFromEnv is the polling the environment asks for: DefaultPolling
// when PollIntervalEnv is unset or empty, else every wait at its interval.
// Both front ends set Config.Polling from it when they configure.
func PollingFromEnv(getenv func(string) string) (Polling, error) {
	v := strings.TrimSpace(getenv(PollIntervalEnv))
	if v == "" {
		return DefaultPolling(), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return Polling{}, fmt.Errorf("environment variable %s=%q: want a positive duration such as 200ms, or unset it to poll as for AWS", PollIntervalEnv, v)
	}
	return PollingEvery(d), nil
}

// polling is the environment's polling, each kind left zero taken from
// DefaultPolling.
func (e *Env) polling() Polling { return e.Polling.WithDefaults() }

// WaitOptions bound a long SageMaker wait (a feature store's, a serving
// endpoint's) and report its progress. How often it polls is the
// environment's (Env.Polling), never the caller's: the Env verbs set it.
type WaitOptions struct {
	Timeout time.Duration // 0: the verb's default
	// Progress, when set, is called after each poll with the state seen.
	Progress func(state string, elapsed time.Duration)

	polling Polling // the environment's; zero kinds poll as for AWS
}

// withPolling is w polling as the environment says.
func (e *Env) withPolling(w WaitOptions) WaitOptions {
	w.polling = e.polling()
	return w
}

// cloud is w as the SageMaker waiters of internal/cloud take it.
func (w WaitOptions) cloud() cloud.WaitOptions {
	return cloud.WaitOptions{Timeout: w.Timeout, Poll: w.polling.WithDefaults().SageMaker, Progress: w.Progress}
}
