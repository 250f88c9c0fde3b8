package provider

import (
	"maps"
	"testing"
)

func TestQuietSDKLogs(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want map[string]string
	}{
		{env: map[string]string{}, want: map[string]string{"TF_LOG_SDK": "OFF"}},
		{env: map[string]string{"TF_LOG": "TRACE"}, want: map[string]string{}},
		{env: map[string]string{"TF_LOG_PROVIDER": "DEBUG"}, want: map[string]string{}},
		{env: map[string]string{"TF_LOG_SDK_FRAMEWORK": "TRACE"}, want: map[string]string{}},
	} {
		set := map[string]string{}
		err := QuietSDKLogs(func(k string) string { return tc.env[k] }, func(k, v string) error { set[k] = v; return nil })
		if err != nil || !maps.Equal(set, tc.want) {
			t.Errorf("env %v: set %v (%v), want %v", tc.env, set, err, tc.want)
		}
	}
}
