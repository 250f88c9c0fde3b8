package platform

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/internal/catalog"
)

func TestCatalogCacheFromEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	for _, tc := range []struct {
		v       string
		off     bool
		ttl     time.Duration
		wantErr bool
	}{
		{v: "", ttl: catalog.DefaultCacheTTL},
		{v: "on", ttl: catalog.DefaultCacheTTL},
		{v: "off", off: true},
		{v: "OFF", off: true},
		{v: "0", off: true},
		{v: "2m", ttl: 2 * time.Minute},
		{v: "2h", wantErr: true},
		{v: "-1m", wantErr: true},
		{v: "soon", wantErr: true},
	} {
		t.Setenv(CatalogCacheEnv, tc.v)
		c, err := catalogCacheFromEnv()
		switch {
		case tc.wantErr:
			if err == nil || !strings.Contains(err.Error(), CatalogCacheEnv) {
				t.Errorf("%q: err %v, want an error naming %s", tc.v, err, CatalogCacheEnv)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.v, err)
		case tc.off:
			if c != nil {
				t.Errorf("%q: cache %+v, want none", tc.v, c)
			}
		case c == nil || c.TTL != tc.ttl || c.Dir != filepath.Join(dir, "mlplatform", "catalog"):
			t.Errorf("%q: cache %+v, want TTL %v in %s", tc.v, c, tc.ttl, filepath.Join(dir, "mlplatform", "catalog"))
		}
	}
}

func TestPartitionOf(t *testing.T) {
	for region, want := range map[string]string{"me-central-1": "aws", "cn-north-1": "aws-cn", "us-gov-west-1": "aws-us-gov", "us-iso-east-1": "aws-iso", "us-isob-east-1": "aws-iso-b"} {
		if got := partitionOf(region); got != want {
			t.Errorf("partitionOf(%q) = %q, want %q", region, got, want)
		}
	}
}
