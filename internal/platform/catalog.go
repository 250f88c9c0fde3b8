package platform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mlplatform/mlplatform/internal/catalog"
	"github.com/mlplatform/mlplatform/internal/cloud"
)

// CatalogCacheEnv turns the disk cache of the instance catalog off ("off")
// or sets its time to live (a duration such as "2m", at most an hour).
const CatalogCacheEnv = "MLPLATFORM_CATALOG_CACHE"

// catalogCacheFromEnv is the catalog cache the environment asks for: by
// default catalog.DefaultCacheTTL in the user's cache directory
// (os.UserCacheDir()/mlplatform/catalog); none when CatalogCacheEnv is
// "off" or the user has no cache directory.
func catalogCacheFromEnv() (*catalog.Cache, error) {
	v := strings.TrimSpace(os.Getenv(CatalogCacheEnv))
	ttl := catalog.DefaultCacheTTL
	switch strings.ToLower(v) {
	case "", "on":
	case "off", "0", "false", "no":
		return nil, nil
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > catalog.MaxCacheTTL {
			return nil, fmt.Errorf("environment variable %s=%q: want off, on or a duration up to %s, such as 5m", CatalogCacheEnv, v, catalog.MaxCacheTTL)
		}
		ttl = d
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return nil, nil // no cache directory (no HOME): nothing kept
	}
	return &catalog.Cache{Dir: filepath.Join(dir, "mlplatform", "catalog"), TTL: ttl}, nil
}

// Zones lists the availability zones of the region, sorted by id. The list
// is asked once per environment (one DescribeAvailabilityZones per provider
// process, whoever needs it first) and shared by every consumer.
func (e *Env) Zones(ctx context.Context) ([]cloud.Zone, error) {
	e.zonesMu.Lock()
	defer e.zonesMu.Unlock()
	if e.zones == nil {
		zones, err := cloud.FindZones(ctx, e.Clients.EC2)
		if err != nil {
			return nil, err
		}
		e.zones = zones
	}
	return slices.Clone(e.zones), nil
}

// Catalog returns the instance catalog for the region with every catalog
// type refreshed from EC2 (offerings and capabilities merged with the
// embedded data), loaded once per environment and, between provider
// processes, kept in the catalog cache.
func (e *Env) Catalog(ctx context.Context) (*catalog.Catalog, error) {
	src, err := e.catalogSource(ctx)
	if err != nil {
		return nil, err
	}
	c, err := src.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading instance catalog for %s: %w", e.Clients.Region, err)
	}
	return c, nil
}

// CatalogFor returns the instance catalog with at least the named types
// refreshed from EC2: a configuration that names one type asks EC2 about that
// type only. Types it did not ask about keep the embedded data and count as
// not offered in the region.
func (e *Env) CatalogFor(ctx context.Context, names ...string) (*catalog.Catalog, error) {
	src, err := e.catalogSource(ctx)
	if err != nil {
		return nil, err
	}
	c, err := src.LoadTypes(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("loading instance catalog for %s: %w", e.Clients.Region, err)
	}
	return c, nil
}

// gpuTypesFor answers the GPU cluster's questions about name from a catalog
// loaded for it alone; only the error paths that list every GPU type offered
// load the whole catalog.
func (e *Env) gpuTypesFor(ctx context.Context, name string) (GPUTypeCatalog, error) {
	c, err := e.CatalogFor(ctx, name)
	if err != nil {
		return nil, err
	}
	return lazyGPUTypes{catalogGPUTypes: catalogGPUTypes{c}, full: func() *catalog.Catalog {
		full, err := e.Catalog(ctx)
		if err != nil {
			return nil
		}
		return full
	}}, nil
}

// lazyGPUTypes lists the GPU types offered from the whole catalog, loaded
// when asked.
type lazyGPUTypes struct {
	catalogGPUTypes
	full func() *catalog.Catalog
}

func (l lazyGPUTypes) GPUTypesOffered(zoneID string) []string {
	if c := l.full(); c != nil {
		return catalogGPUTypes{c}.GPUTypesOffered(zoneID)
	}
	return l.catalogGPUTypes.GPUTypesOffered(zoneID)
}

// catalogSource is the environment's catalog source, made on first use: its
// cache key needs the credentials' account.
func (e *Env) catalogSource(ctx context.Context) (*catalog.Source, error) {
	e.catalogMu.Lock()
	defer e.catalogMu.Unlock()
	if e.catalogSrc != nil {
		return e.catalogSrc, nil
	}
	src := &catalog.Source{
		API:    e.Clients.EC2,
		Region: e.Clients.Region,
		ZoneNames: func(ctx context.Context) (map[string]string, error) {
			zones, err := e.Zones(ctx)
			if err != nil {
				return nil, err
			}
			names := make(map[string]string, len(zones))
			for _, z := range zones {
				names[z.ID] = z.Name
			}
			return names, nil
		},
	}
	if e.CatalogCache != nil {
		if account, ok := e.cacheAccount(ctx); ok {
			src.Cache = e.CatalogCache
			src.Key = catalog.CacheKey{Account: account, Partition: partitionOf(e.Clients.Region), Region: e.Clients.Region,
				Endpoint: aws.ToString(e.Clients.EC2.Options().BaseEndpoint)}
		}
	}
	e.catalogSrc = src
	return src, nil
}

// cacheAccount names the account of the credentials for the cache key
// without an AWS call: the account id the credentials carry, else a digest
// of their access key id. ok is false when the credentials cannot be had
// (then nothing is cached).
func (e *Env) cacheAccount(ctx context.Context) (string, bool) {
	if e.Clients.AWS.Credentials == nil {
		return "", false
	}
	creds, err := e.Clients.AWS.Credentials.Retrieve(ctx)
	if err != nil || creds.AccessKeyID == "" {
		return "", false
	}
	if creds.AccountID != "" {
		return creds.AccountID, true
	}
	sum := sha256.Sum256([]byte(creds.AccessKeyID))
	return "key-" + hex.EncodeToString(sum[:8]), true
}

// partitionOf is the AWS partition of a region.
func partitionOf(region string) string {
	for _, p := range []struct{ prefix, partition string }{
		{"cn-", "aws-cn"}, {"us-gov-", "aws-us-gov"}, {"us-isob-", "aws-iso-b"}, {"us-iso-", "aws-iso"},
		{"eu-isoe-", "aws-iso-e"}, {"us-isof-", "aws-iso-f"},
	} {
		if strings.HasPrefix(region, p.prefix) {
			return p.partition
		}
	}
	return "aws"
}
