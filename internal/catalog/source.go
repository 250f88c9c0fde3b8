package catalog

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Source loads the catalog of one region lazily: only the instance types
// asked for, from the disk cache where it holds fresh facts, else from EC2
// (the offerings of those types, then DescribeInstanceTypes for the offered
// ones). What it learnt is kept for the life of the Source, so a process asks
// EC2 about a type at most once. It is safe for concurrent use.
type Source struct {
	API    EC2API
	Region string
	// ZoneNames maps the region's zone ids to names; nil: zone names are
	// left out. It is called only when facts come from EC2 and the cache
	// holds no fresh names, and an error there does not fail the load (zone
	// ids are what the catalog needs).
	ZoneNames func(ctx context.Context) (map[string]string, error)
	// Cache, when not nil, keeps facts between processes under Key.
	Cache *Cache
	Key   CacheKey
	// Now is the clock; nil: time.Now.
	Now func() time.Time

	mu    sync.Mutex
	base  *Catalog
	known map[string]facts
	zones map[string]string
	full  *Catalog
	// partial is the catalog LoadTypes last merged, still current while
	// nothing was learnt since (learnt counts what ensure added): every
	// LoadTypes answered from what the Source already knows returns the
	// same catalog, which callers may key memos on.
	partial   *Catalog
	partialAt int
	learnt    int
}

// Load returns the catalog with every embedded type refreshed.
func (s *Source) Load(ctx context.Context) (*Catalog, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.full != nil {
		return s.full, nil
	}
	base, err := s.embedded()
	if err != nil {
		return nil, err
	}
	if err := s.ensure(ctx, base.names); err != nil {
		return nil, err
	}
	s.full = merge(base, s.Region, s.known, s.zones)
	return s.full, nil
}

// LoadTypes returns the catalog with at least names refreshed (and whatever
// the Source learnt before). Names the embedded data does not hold are not
// asked for. Types not refreshed keep the embedded data and are not offered
// in the loaded region.
func (s *Source) LoadTypes(ctx context.Context, names ...string) (*Catalog, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.full != nil {
		return s.full, nil
	}
	base, err := s.embedded()
	if err != nil {
		return nil, err
	}
	var want []string
	for _, n := range names {
		if _, ok := base.types[n]; ok && !slices.Contains(want, n) {
			want = append(want, n)
		}
	}
	if err := s.ensure(ctx, want); err != nil {
		return nil, err
	}
	if s.partial == nil || s.partialAt != s.learnt {
		s.partial, s.partialAt = merge(base, s.Region, s.known, s.zones), s.learnt
	}
	return s.partial, nil
}

func (s *Source) embedded() (*Catalog, error) {
	if s.base == nil {
		b, err := Embedded()
		if err != nil {
			return nil, err
		}
		s.base = b
	}
	return s.base, nil
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// ensure makes s.known hold every name: from memory, then the cache, then
// EC2. Called with s.mu held.
func (s *Source) ensure(ctx context.Context, names []string) error {
	if s.known == nil {
		s.known = map[string]facts{}
	}
	missing := slices.DeleteFunc(slices.Clone(names), func(n string) bool { _, ok := s.known[n]; return ok })
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	s.learnt++
	cached, cachedZones := s.Cache.get(s.Key, missing)
	for n, f := range cached {
		s.known[n] = f
	}
	if s.zones == nil && cachedZones != nil {
		s.zones = cachedZones
	}
	missing = slices.DeleteFunc(missing, func(n string) bool { _, ok := cached[n]; return ok })
	// Zone names are asked once per Source when the cache holds none fresh,
	// beside the facts: neither call needs the other's answer.
	var zoneNames chan map[string]string
	if s.zones == nil && s.ZoneNames != nil {
		zoneNames = make(chan map[string]string, 1)
		zctx, cancel := context.WithCancel(ctx)
		defer cancel() // a failed fetch need not wait for the zones
		go func() {
			z, err := s.ZoneNames(zctx)
			if err != nil {
				z = nil
			}
			zoneNames <- z
		}()
	}
	now := s.now().UTC()
	var fetched map[string]facts
	if len(missing) > 0 {
		var err error
		if fetched, err = fetch(ctx, s.API, s.Region, missing, now); err != nil {
			return err
		}
		for n, f := range fetched {
			s.known[n] = f
		}
	}
	var newZones map[string]string
	if zoneNames != nil {
		if z := <-zoneNames; z != nil {
			s.zones, newZones = z, z
		}
	}
	if len(fetched) > 0 || newZones != nil {
		// The cache saves calls; a cache that cannot be written costs
		// calls later, never the load.
		_ = s.Cache.put(s.Key, fetched, newZones, now)
	}
	return nil
}
