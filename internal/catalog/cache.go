package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// DefaultCacheTTL is how long cached EC2 facts are used: long enough for the
// validate, plan and apply processes of one Terraform or Pulumi run to share
// one load, short enough that a type or zone EC2 stops offering is seen
// within minutes.
const DefaultCacheTTL = 10 * time.Minute

// MaxCacheTTL bounds a configured TTL: the cache saves calls within a run;
// it is not a snapshot of the region.
const MaxCacheTTL = time.Hour

// cacheSchema is the version of the cache file format; a file of another
// version is ignored.
const cacheSchema = 1

// clockSkew is how far in the future a fetch time may lie before the entry
// is distrusted.
const clockSkew = time.Minute

// CacheKey names whose view of EC2 a cache file holds. Offerings and zone
// names differ between accounts (zone names map to different zone ids),
// partitions and regions; an endpoint override (an emulator, a VPC
// endpoint) may answer differently from AWS.
type CacheKey struct {
	Account   string `json:"account"` // account id, or a digest of the credentials' key id when the account is unknown
	Partition string `json:"partition"`
	Region    string `json:"region"`
	Endpoint  string `json:"endpoint"` // the EC2 endpoint override; empty for AWS's own
}

// Cache keeps EC2 facts on disk between provider processes: one file per
// key, written atomically (a temporary file renamed over it), each entry with
// its fetch time. Entries older than TTL, files of another format, key or
// embedded catalog, and files whose checksum does not match are ignored. Two
// processes writing at once both succeed; the last rename wins and the other
// process's new entries are fetched again later. A nil *Cache caches nothing.
type Cache struct {
	Dir string
	TTL time.Duration // zero: DefaultCacheTTL
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// cacheFile is the file on disk: the payload and its checksum.
type cacheFile struct {
	SHA256  string          `json:"sha256"`
	Payload json.RawMessage `json:"payload"`
}

type cachePayload struct {
	Schema   int               `json:"schema"`
	Key      CacheKey          `json:"key"`
	Embedded string            `json:"embedded"` // digest of the embedded data the facts were merged with
	Types    map[string]facts  `json:"types"`
	Zones    map[string]string `json:"zones,omitempty"` // zone id -> name
	ZonesAt  time.Time         `json:"zones_at"`
}

func (c *Cache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Cache) ttl() time.Duration {
	switch {
	case c.TTL <= 0:
		return DefaultCacheTTL
	case c.TTL > MaxCacheTTL:
		return MaxCacheTTL
	}
	return c.TTL
}

// path is the file of key: a digest of the key and format, so that nothing
// of the key (an endpoint URL) appears in a file name.
func (c *Cache) path(key CacheKey) string {
	b, _ := json.Marshal(struct {
		Schema int
		Key    CacheKey
	}{cacheSchema, key})
	sum := sha256.Sum256(b)
	return filepath.Join(c.Dir, hex.EncodeToString(sum[:12])+".json")
}

// fresh reports whether a fetch at t may still be used.
func (c *Cache) fresh(t time.Time, now time.Time) bool {
	return !t.IsZero() && now.Sub(t) < c.ttl() && t.Sub(now) < clockSkew
}

// read returns the payload of key's file when it is valid and for key;
// nothing otherwise. Entries are not filtered for age.
func (c *Cache) read(key CacheKey) *cachePayload {
	if c == nil || c.Dir == "" {
		return nil
	}
	b, err := os.ReadFile(c.path(key))
	if err != nil {
		return nil
	}
	var f cacheFile
	if err := json.Unmarshal(b, &f); err != nil || len(f.Payload) == 0 {
		return nil
	}
	if sha256Hex(f.Payload) != f.SHA256 {
		return nil
	}
	var p cachePayload
	if err := json.Unmarshal(f.Payload, &p); err != nil {
		return nil
	}
	if p.Schema != cacheSchema || p.Key != key || p.Embedded != embeddedDigest() {
		return nil
	}
	return &p
}

// get returns the fresh facts of names held for key, and the zone names
// when they are fresh too. Names without a fresh entry are left out.
func (c *Cache) get(key CacheKey, names []string) (map[string]facts, map[string]string) {
	p := c.read(key)
	if p == nil {
		return nil, nil
	}
	now := c.now()
	out := map[string]facts{}
	for _, n := range names {
		if f, ok := p.Types[n]; ok && c.fresh(f.FetchedAt, now) {
			out[n] = f
		}
	}
	var zones map[string]string
	if len(p.Zones) > 0 && c.fresh(p.ZonesAt, now) {
		zones = p.Zones
	}
	return out, zones
}

// put adds facts (and zone names, when not nil) to key's file: the fresh
// entries already there are kept, stale ones dropped. The file is replaced
// atomically.
func (c *Cache) put(key CacheKey, add map[string]facts, zones map[string]string, zonesAt time.Time) error {
	if c == nil || c.Dir == "" {
		return nil
	}
	now := c.now()
	p := &cachePayload{Schema: cacheSchema, Key: key, Embedded: embeddedDigest(), Types: map[string]facts{}}
	if old := c.read(key); old != nil {
		for n, f := range old.Types {
			if c.fresh(f.FetchedAt, now) {
				p.Types[n] = f
			}
		}
		if c.fresh(old.ZonesAt, now) {
			p.Zones, p.ZonesAt = old.Zones, old.ZonesAt
		}
	}
	for n, f := range add {
		p.Types[n] = f
	}
	if zones != nil {
		p.Zones, p.ZonesAt = zones, zonesAt
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encoding catalog cache: %w", err)
	}
	b, err := json.Marshal(cacheFile{SHA256: sha256Hex(payload), Payload: payload})
	if err != nil {
		return fmt.Errorf("encoding catalog cache: %w", err)
	}
	return writeAtomic(c.path(key), b)
}

// writeAtomic writes b to a temporary file beside path and renames it over
// path: a reader sees the old file or the new one, never a part.
func writeAtomic(path string, b []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating catalog cache directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("writing catalog cache: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing catalog cache: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing catalog cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing catalog cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing catalog cache: %w", err)
	}
	return nil
}

// embeddedDigest identifies the embedded data: facts cached by a provider
// built with other data are not reused.
func embeddedDigest() string {
	sum := sha256.Sum256(embeddedJSON)
	return hex.EncodeToString(sum[:8])
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
