package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

var testKey = CacheKey{Account: "123456789012", Partition: "aws", Region: "me-central-1", Endpoint: "http://127.0.0.1:5000"}

// clock is a settable clock for the cache and the source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// process is what one provider process builds: a fresh Source over a shared
// cache directory.
func process(api EC2API, cache *Cache, key CacheKey, clk *clock) *Source {
	return &Source{API: api, Region: "me-central-1", Cache: cache, Key: key, Now: clk.Now,
		ZoneNames: func(ctx context.Context) (map[string]string, error) {
			if zn, ok := api.(zoneNamer); ok {
				return describeZoneNames(ctx, zn)
			}
			return nil, nil
		}}
}

func totalCalls(f *fakeEC2) int { return f.calls["offerings"] + f.calls["types"] + f.calls["zones"] }

func newCache(t *testing.T, clk *clock) *Cache {
	return &Cache{Dir: filepath.Join(t.TempDir(), "mlplatform", "catalog"), TTL: 10 * time.Minute, Now: clk.Now}
}

// A second process within the TTL reads the catalog from the cache: no EC2
// call, and the same answers (zones, names, live capabilities).
func TestCacheHit(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	cache := newCache(t, clk)
	f := newFakeEC2()
	first, err := process(fakeEC2WithZones{f}, cache, testKey, clk).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := totalCalls(f); n == 0 {
		t.Fatal("the first process made no EC2 call")
	}
	clk.add(9 * time.Minute)
	g := newFakeEC2()
	second, err := process(fakeEC2WithZones{g}, cache, testKey, clk).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := totalCalls(g); n != 0 {
		t.Errorf("a process within the TTL made %d EC2 calls (%v), want 0", n, g.calls)
	}
	for _, name := range first.Names() {
		a, _ := first.Lookup(name)
		b, ok := second.Lookup(name)
		if !ok || !slices.Equal(a.ZoneIDs, b.ZoneIDs) || !slices.Equal(a.ZoneNames, b.ZoneNames) || a.Live != b.Live || a.EFA != b.EFA || a.VCPUs != b.VCPUs {
			t.Errorf("%s from the cache differs: %+v, want %+v", name, b, a)
		}
	}
	if !second.Live() || !second.OfferedIn("p5en.48xlarge", "mec1-az1") || second.OfferedIn("p5en.48xlarge", "mec1-az2") {
		t.Error("cached catalog does not follow the cached offerings")
	}
	p5en, _ := second.Lookup("p5en.48xlarge")
	if p5en.EFA.MaxInterfaces != 32 || !slices.Equal(p5en.ZoneNames, []string{"me-central-1a", "me-central-1c"}) {
		t.Errorf("cached p5en.48xlarge = %+v", p5en)
	}
}

// Another account, region, partition or endpoint never reads the entry.
func TestCacheWrongKey(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	cache := newCache(t, clk)
	if _, err := process(newFakeEC2(), cache, testKey, clk).Load(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []CacheKey{
		{Account: "210987654321", Partition: "aws", Region: "me-central-1", Endpoint: testKey.Endpoint},
		{Account: testKey.Account, Partition: "aws", Region: "me-south-1", Endpoint: testKey.Endpoint},
		{Account: testKey.Account, Partition: "aws-cn", Region: "me-central-1", Endpoint: testKey.Endpoint},
		{Account: testKey.Account, Partition: "aws", Region: "me-central-1"},
	} {
		f := newFakeEC2()
		if _, err := process(f, cache, k, clk).Load(ctx); err != nil {
			t.Fatal(err)
		}
		if f.calls["offerings"] == 0 || f.calls["types"] == 0 {
			t.Errorf("key %+v read another key's entry: calls %v", k, f.calls)
		}
	}
	// A file renamed to another key's name is refused by the key inside it.
	other := CacheKey{Account: "999999999999", Partition: "aws", Region: "me-central-1"}
	b, err := os.ReadFile(cache.path(testKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cache.path(other), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := cache.get(other, []string{"p5en.48xlarge"}); len(got) != 0 {
		t.Errorf("a file holding another key's facts was used: %v", got)
	}
}

// Past the TTL the entry is not used, and EC2's new answer wins: a type EC2
// stopped offering in a zone is no longer offered there.
func TestCacheExpired(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	cache := newCache(t, clk)
	if _, err := process(newFakeEC2(), cache, testKey, clk).Load(ctx); err != nil {
		t.Fatal(err)
	}
	clk.add(10*time.Minute + time.Second)
	f := newFakeEC2()
	f.offerings = slices.DeleteFunc(f.offerings, func(o types.InstanceTypeOffering) bool {
		return o.InstanceType == "p5en.48xlarge" && aws.ToString(o.Location) == "mec1-az1"
	})
	c, err := process(f, cache, testKey, clk).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f.calls["offerings"] == 0 || f.calls["types"] == 0 {
		t.Errorf("an expired entry was used: calls %v", f.calls)
	}
	if c.OfferedIn("p5en.48xlarge", "mec1-az1") || !c.OfferedIn("p5en.48xlarge", "mec1-az3") {
		t.Error("the live answer after the TTL did not win")
	}
	// An entry dated in the future (a clock set back, a forged file) is not
	// trusted either.
	clk.add(-time.Hour)
	if got, _ := cache.get(testKey, []string{"p5en.48xlarge"}); len(got) != 0 {
		t.Errorf("an entry fetched an hour in the future was used")
	}
}

// A corrupt file (truncated, edited without its checksum, another format, not
// JSON) is ignored, and the next load replaces it.
func TestCacheCorrupt(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	cache := newCache(t, clk)
	if _, err := process(newFakeEC2(), cache, testKey, clk).Load(ctx); err != nil {
		t.Fatal(err)
	}
	path := cache.path(testKey)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f cacheFile
	if err := json.Unmarshal(good, &f); err != nil {
		t.Fatal(err)
	}
	var p cachePayload
	if err := json.Unmarshal(f.Payload, &p); err != nil {
		t.Fatal(err)
	}
	// The same payload with p5en offered in mec1-az2 too, checksum unchanged.
	edited := p
	edited.Types = map[string]facts{}
	for k, v := range p.Types {
		edited.Types[k] = v
	}
	e := edited.Types["p5en.48xlarge"]
	e.ZoneIDs = []string{"mec1-az1", "mec1-az2", "mec1-az3"}
	edited.Types["p5en.48xlarge"] = e
	editedPayload, _ := json.Marshal(edited)
	editedFile, _ := json.Marshal(cacheFile{SHA256: f.SHA256, Payload: editedPayload})
	// Another schema version, checksum right.
	old := p
	old.Schema = cacheSchema + 1
	oldPayload, _ := json.Marshal(old)
	sum := sha256Hex(oldPayload)
	oldFile, _ := json.Marshal(cacheFile{SHA256: sum, Payload: oldPayload})

	for name, b := range map[string][]byte{
		"truncated":    good[:len(good)/2],
		"edited":       editedFile,
		"other schema": oldFile,
		"not json":     []byte("\x00\x01garbage"),
		"empty":        {},
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		f := newFakeEC2()
		c, err := process(f, cache, testKey, clk).Load(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.calls["offerings"] == 0 {
			t.Errorf("%s: the file was trusted (no EC2 call)", name)
		}
		if c.OfferedIn("p5en.48xlarge", "mec1-az2") {
			t.Errorf("%s: p5en.48xlarge offered in mec1-az2 from a corrupt file", name)
		}
		if got, _ := cache.get(testKey, []string{"p5en.48xlarge"}); len(got) != 1 {
			t.Errorf("%s: the load did not replace the corrupt file", name)
		}
	}
}

// Processes writing the same key at once: every write succeeds, a reader
// never sees a partial file, and no temporary file is left behind.
func TestCacheConcurrentWriters(t *testing.T) {
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	cache := newCache(t, clk)
	base, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	names := base.Names()
	const writers, rounds = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds*2)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				n := names[(w*rounds+r)%len(names)]
				// A writer of its own, as another process would be.
				c := &Cache{Dir: cache.Dir, TTL: cache.TTL, Now: clk.Now}
				if err := c.put(testKey, map[string]facts{n: {FetchedAt: clk.Now(), ZoneIDs: []string{"mec1-az1"}}}, map[string]string{"mec1-az1": "me-central-1a"}, clk.Now()); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
				}
				if c.read(testKey) == nil {
					errs <- fmt.Errorf("writer %d round %d: read a missing or invalid file", w, r)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	p := cache.read(testKey)
	if p == nil || len(p.Types) == 0 {
		t.Fatal("no valid file after the writers")
	}
	entries, err := os.ReadDir(cache.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var left []string
		for _, e := range entries {
			left = append(left, e.Name())
		}
		t.Errorf("cache directory holds %v, want the one file", left)
	}
	if info, err := os.Stat(cache.Dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("cache directory mode = %v, %v; want 0700", info.Mode().Perm(), err)
	}
}

// A configuration that touches one type asks EC2 about that type only, and
// a process asks about a type once.
func TestSourceLoadsLazily(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	f := newFakeEC2()
	src := process(fakeEC2WithZones{f}, nil, testKey, clk)
	c, err := src.LoadTypes(ctx, "p5en.48xlarge")
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"p5en.48xlarge"}}; !equalNested(f.asked, want) || !equalNested(f.offerFilters, want) {
		t.Errorf("DescribeInstanceTypes asked %v, offerings filtered by %v; want only p5en.48xlarge", f.asked, f.offerFilters)
	}
	if !c.OfferedIn("p5en.48xlarge", "mec1-az1") || c.OfferedIn("p5en.48xlarge", "mec1-az2") {
		t.Error("p5en.48xlarge offerings wrong")
	}
	// A type not asked for is not offered in the loaded region, whatever
	// the embedded data says (g5.xlarge is offered live in every zone).
	if c.OfferedIn("g5.xlarge", "mec1-az1") || len(c.Find(Filter{OfferedOnly: true, GPUModel: "A10G"})) != 0 {
		t.Error("a type the partial load did not ask for counts as offered")
	}
	if _, err := src.LoadTypes(ctx, "g5.xlarge", "p5en.48xlarge", "no-such.type"); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"p5en.48xlarge"}, {"g5.xlarge"}}; !equalNested(f.asked, want) {
		t.Errorf("DescribeInstanceTypes asked %v, want %v", f.asked, want)
	}
	if f.calls["zones"] != 1 {
		t.Errorf("zone names asked %d times, want once", f.calls["zones"])
	}
	calls := totalCalls(f)
	if _, err := src.LoadTypes(ctx, "p5en.48xlarge"); err != nil {
		t.Fatal(err)
	}
	if totalCalls(f) != calls {
		t.Errorf("a type asked twice was fetched twice: %v", f.calls)
	}
}

// The lazy load and the cache together: a second process needing another
// type asks EC2 about that type only and keeps the first one's entry.
func TestSourceCacheMergesTypes(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	cache := newCache(t, clk)
	f := newFakeEC2()
	if _, err := process(fakeEC2WithZones{f}, cache, testKey, clk).LoadTypes(ctx, "p5en.48xlarge"); err != nil {
		t.Fatal(err)
	}
	g := newFakeEC2()
	c, err := process(fakeEC2WithZones{g}, cache, testKey, clk).LoadTypes(ctx, "p5en.48xlarge", "g5.xlarge")
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"g5.xlarge"}}; !equalNested(g.asked, want) || g.calls["zones"] != 0 {
		t.Errorf("second process asked %v (zones %d), want g5.xlarge only and cached zone names", g.asked, g.calls["zones"])
	}
	if !c.OfferedIn("p5en.48xlarge", "mec1-az3") || !c.OfferedIn("g5.xlarge", "mec1-az2") {
		t.Error("offerings lost")
	}
	h := newFakeEC2()
	if _, err := process(fakeEC2WithZones{h}, cache, testKey, clk).LoadTypes(ctx, "g5.xlarge", "p5en.48xlarge"); err != nil {
		t.Fatal(err)
	}
	if n := totalCalls(h); n != 0 {
		t.Errorf("third process made %d calls, want 0", n)
	}
}

func TestCacheTTLBounds(t *testing.T) {
	for _, tc := range []struct{ set, want time.Duration }{{0, DefaultCacheTTL}, {-time.Second, DefaultCacheTTL}, {time.Minute, time.Minute}, {48 * time.Hour, MaxCacheTTL}} {
		if got := (&Cache{TTL: tc.set}).ttl(); got != tc.want {
			t.Errorf("TTL %v -> %v, want %v", tc.set, got, tc.want)
		}
	}
}

func equalNested(a, b [][]string) bool {
	return slices.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}
