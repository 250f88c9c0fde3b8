package catalog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// fakeEC2 serves offerings in pages of pageSize and instance types by name,
// and counts calls. Zone names are asked beside the offerings: its methods
// may be called at once.
type fakeEC2 struct {
	mu        sync.Mutex
	offerings []types.InstanceTypeOffering
	infos     map[string]types.InstanceTypeInfo
	pageSize  int
	failOn    string
	calls     map[string]int
	asked     [][]string // instance type names per DescribeInstanceTypes call
	// offerFilters are the instance-type filter values per offerings call.
	offerFilters [][]string
}

func (f *fakeEC2) DescribeInstanceTypeOfferings(_ context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["offerings"]++
	if f.failOn == "offerings" {
		return nil, errors.New("UnauthorizedOperation")
	}
	if in.LocationType != types.LocationTypeAvailabilityZoneId {
		return nil, fmt.Errorf("location type %q, want availability-zone-id", in.LocationType)
	}
	// Honour the instance-type filter as EC2 does (exact names).
	offerings := f.offerings
	for _, flt := range in.Filters {
		if aws.ToString(flt.Name) != "instance-type" {
			return nil, fmt.Errorf("unexpected filter %q", aws.ToString(flt.Name))
		}
		f.offerFilters = append(f.offerFilters, flt.Values)
		var kept []types.InstanceTypeOffering
		for _, o := range offerings {
			if slices.Contains(flt.Values, string(o.InstanceType)) {
				kept = append(kept, o)
			}
		}
		offerings = kept
	}
	start := 0
	if in.NextToken != nil {
		start, _ = strconv.Atoi(*in.NextToken)
	}
	end := min(start+f.pageSize, len(offerings))
	out := &ec2.DescribeInstanceTypeOfferingsOutput{InstanceTypeOfferings: offerings[start:end]}
	if end < len(offerings) {
		out.NextToken = aws.String(strconv.Itoa(end))
	}
	return out, nil
}

func (f *fakeEC2) DescribeInstanceTypes(_ context.Context, in *ec2.DescribeInstanceTypesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["types"]++
	if f.failOn == "types" {
		return nil, errors.New("throttled")
	}
	if len(in.InstanceTypes) == 0 || len(in.InstanceTypes) > describeBatch {
		return nil, fmt.Errorf("asked for %d instance types", len(in.InstanceTypes))
	}
	var names []string
	out := &ec2.DescribeInstanceTypesOutput{}
	for _, n := range in.InstanceTypes {
		names = append(names, string(n))
		if info, ok := f.infos[string(n)]; ok {
			out.InstanceTypes = append(out.InstanceTypes, info)
		}
	}
	f.asked = append(f.asked, names)
	return out, nil
}

// fakeEC2WithZones also names zones.
type fakeEC2WithZones struct{ *fakeEC2 }

func (f fakeEC2WithZones) DescribeAvailabilityZones(_ context.Context, _ *ec2.DescribeAvailabilityZonesInput, _ ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["zones"]++
	return &ec2.DescribeAvailabilityZonesOutput{AvailabilityZones: []types.AvailabilityZone{
		{ZoneId: aws.String("mec1-az1"), ZoneName: aws.String("me-central-1a")},
		{ZoneId: aws.String("mec1-az2"), ZoneName: aws.String("me-central-1b")},
		{ZoneId: aws.String("mec1-az3"), ZoneName: aws.String("me-central-1c")},
	}}, nil
}

func info(name string, vcpus int32, mib int64, arch types.ArchitectureType, gpu *types.GpuInfo, efa int32, strategies ...types.PlacementGroupStrategy) types.InstanceTypeInfo {
	ni := &types.NetworkInfo{EfaSupported: aws.Bool(efa > 0)}
	if efa > 0 {
		ni.EfaInfo = &types.EfaInfo{MaximumEfaInterfaces: aws.Int32(efa)}
	}
	return types.InstanceTypeInfo{
		InstanceType:       types.InstanceType(name),
		VCpuInfo:           &types.VCpuInfo{DefaultVCpus: aws.Int32(vcpus)},
		MemoryInfo:         &types.MemoryInfo{SizeInMiB: aws.Int64(mib)},
		ProcessorInfo:      &types.ProcessorInfo{SupportedArchitectures: []types.ArchitectureType{arch}, Manufacturer: aws.String("Intel"), SustainedClockSpeedInGhz: aws.Float64(2.4)},
		GpuInfo:            gpu,
		NetworkInfo:        ni,
		PlacementGroupInfo: &types.PlacementGroupInfo{SupportedStrategies: strategies},
	}
}

func gpus(model string, count int32, mib int32) *types.GpuInfo {
	return &types.GpuInfo{Gpus: []types.GpuDeviceInfo{{Name: aws.String(model), Manufacturer: aws.String("NVIDIA"), Count: aws.Int32(count), MemoryInfo: &types.GpuDeviceMemoryInfo{SizeInMiB: aws.Int32(mib)}}}}
}

func offer(name string, zones ...string) []types.InstanceTypeOffering {
	var out []types.InstanceTypeOffering
	for _, z := range zones {
		out = append(out, types.InstanceTypeOffering{InstanceType: types.InstanceType(name), Location: aws.String(z), LocationType: types.LocationTypeAvailabilityZoneId})
	}
	return out
}

func newFakeEC2() *fakeEC2 {
	var offs []types.InstanceTypeOffering
	offs = append(offs, offer("p5en.48xlarge", "mec1-az1", "mec1-az3")...)
	offs = append(offs, offer("g5.xlarge", "mec1-az1", "mec1-az2", "mec1-az3")...)
	offs = append(offs, offer("c7i.large", "mec1-az1", "mec1-az2")...)
	offs = append(offs, offer("c7i.metal-24xl", "mec1-az1")...) // not in the embedded data: not asked for
	offs = append(offs, offer("t3.micro", "mec1-az1")...)       // family outside the catalog: not asked for
	return &fakeEC2{
		pageSize:  3,
		offerings: offs,
		calls:     map[string]int{},
		infos: map[string]types.InstanceTypeInfo{
			// Live says 32 EFA interfaces: live wins over the embedded 16.
			"p5en.48xlarge":  info("p5en.48xlarge", 192, 2097152, types.ArchitectureTypeX8664, gpus("H200", 8, 144384), 32, "cluster", "spread"),
			"g5.xlarge":      info("g5.xlarge", 4, 16384, types.ArchitectureTypeX8664, gpus("A10G", 1, 22888), 0, "cluster"),
			"c7i.large":      info("c7i.large", 2, 4096, types.ArchitectureTypeX8664, nil, 0, "cluster", "partition", "spread"),
			"c7i.metal-24xl": info("c7i.metal-24xl", 96, 196608, types.ArchitectureTypeX8664, nil, 0, "cluster"),
		},
	}
}

func TestLoad(t *testing.T) {
	f := newFakeEC2()
	c, err := Load(context.Background(), fakeEC2WithZones{f}, "me-central-1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Region() != "me-central-1" || !c.Live() || c.LoadedAt().IsZero() || !strings.Contains(c.Source(), "refreshed from EC2 in me-central-1") {
		t.Fatalf("catalog meta: region %q live %v loaded %v source %q", c.Region(), c.Live(), c.LoadedAt(), c.Source())
	}
	// A handful of calls: 7 matching offerings in pages of 3, one DescribeInstanceTypes, one zone listing.
	if f.calls["offerings"] != 3 || f.calls["types"] != 1 || f.calls["zones"] != 1 {
		t.Errorf("calls = %v", f.calls)
	}
	if want := []string{"c7i.large", "g5.xlarge", "p5en.48xlarge"}; len(f.asked) != 1 || !slices.Equal(f.asked[0], want) {
		t.Errorf("DescribeInstanceTypes asked %v, want %v", f.asked, want)
	}

	p5en, _ := c.Lookup("p5en.48xlarge")
	if !p5en.Live || p5en.EFA.MaxInterfaces != 32 || !slices.Equal(p5en.PlacementStrategies, []string{"cluster", "spread"}) {
		t.Errorf("live did not win: %+v", p5en)
	}
	if p5en.GPU.PeakBF16TFLOPS != 989 || p5en.GPU.MemoryBandwidthGBps != 4800 || p5en.GPU.MemoryGiB != 141 || !p5en.HasCPUFeatures("amx_tile") {
		t.Errorf("embedded peaks or features lost: %+v %+v", p5en.GPU, p5en.CPU)
	}
	if !slices.Equal(p5en.ZoneIDs, []string{"mec1-az1", "mec1-az3"}) || !slices.Equal(p5en.ZoneNames, []string{"me-central-1a", "me-central-1c"}) {
		t.Errorf("zones = %v %v", p5en.ZoneIDs, p5en.ZoneNames)
	}
	if !c.OfferedIn("p5en.48xlarge", "mec1-az1") || c.OfferedIn("p5en.48xlarge", "mec1-az2") {
		t.Error("OfferedIn does not follow live zones")
	}

	// Embedded knowledge says g6 is offered in me-central-1; live says no.
	g6, _ := c.Lookup("g6.xlarge")
	if g6.Live || len(g6.ZoneIDs) != 0 || slices.Contains(g6.Regions, "me-central-1") || c.OfferedIn("g6.xlarge", "mec1-az1") {
		t.Errorf("g6.xlarge not corrected by live offerings: %+v", g6)
	}
	// Offerings elsewhere are still the embedded knowledge.
	if !c.OfferedIn("p5.48xlarge", "use1-az1") || c.OfferedIn("p5.48xlarge", "mec1-az1") {
		t.Error("p5.48xlarge offerings wrong")
	}

	// The catalog covers the embedded types: offerings are asked by name.
	if _, ok := c.Lookup("c7i.metal-24xl"); ok {
		t.Error("c7i.metal-24xl is not in the embedded data and was not asked for, yet the catalog has it")
	}

	var offered []string
	for _, it := range c.Find(Filter{OfferedOnly: true}) {
		offered = append(offered, it.Name)
	}
	if want := []string{"c7i.large", "g5.xlarge", "p5en.48xlarge"}; !slices.Equal(offered, want) {
		t.Errorf("offered = %v, want %v", offered, want)
	}
	if got := c.Find(Filter{GPUModel: "H100", OfferedOnly: true}); len(got) != 0 {
		t.Errorf("H100 offered in me-central-1: %v", got)
	}
}

func TestLoadWithoutZoneNames(t *testing.T) {
	c, err := Load(context.Background(), newFakeEC2(), "me-central-1")
	if err != nil {
		t.Fatal(err)
	}
	g5, _ := c.Lookup("g5.xlarge")
	if len(g5.ZoneIDs) != 3 || len(g5.ZoneNames) != 0 {
		t.Errorf("zones = %v %v", g5.ZoneIDs, g5.ZoneNames)
	}
}

// Offerings are asked for the embedded types by name, never listed whole:
// an unfiltered listing returns every type of the region.
func TestLoadAsksOfferingsByName(t *testing.T) {
	f := newFakeEC2()
	f.pageSize = 1000
	if _, err := Load(context.Background(), f, "me-central-1"); err != nil {
		t.Fatal(err)
	}
	base, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	for _, vals := range f.offerFilters {
		if len(vals) == 0 || len(vals) > describeBatch {
			t.Errorf("offerings filter with %d names", len(vals))
		}
		asked = append(asked, vals...)
	}
	want := base.Names()
	slices.Sort(asked)
	slices.Sort(want)
	if !slices.Equal(asked, want) {
		t.Errorf("offerings asked for %d names, want the %d embedded types", len(asked), len(base.Names()))
	}
}

func TestLoadErrors(t *testing.T) {
	for _, op := range []string{"offerings", "types"} {
		f := newFakeEC2()
		f.failOn = op
		if _, err := Load(context.Background(), f, "me-central-1"); err == nil || !strings.Contains(err.Error(), "me-central-1") {
			t.Errorf("failing %s: err = %v", op, err)
		}
	}
}

// Loading does not touch the embedded baseline or an earlier catalog.
func TestLoadIsolation(t *testing.T) {
	c1, err := Load(context.Background(), newFakeEC2(), "me-central-1")
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeEC2()
	f.offerings = offer("g6.xlarge", "mec1-az2")
	f.infos = map[string]types.InstanceTypeInfo{"g6.xlarge": info("g6.xlarge", 4, 16384, types.ArchitectureTypeX8664, gpus("L4", 1, 22888), 0, "cluster")}
	if _, err := Load(context.Background(), f, "me-central-1"); err != nil {
		t.Fatal(err)
	}
	if c1.OfferedIn("g6.xlarge", "mec1-az2") {
		t.Error("a later load changed an earlier catalog")
	}
	e := embedded(t)
	if g6, _ := e.Lookup("g6.xlarge"); g6.Live || len(g6.ZoneIDs) != 0 {
		t.Error("a load changed the embedded baseline")
	}
}

// TestLoadMoto runs Load against moto's EC2 when moto_server is installed.
func TestLoadMoto(t *testing.T) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Skip("moto_server not on PATH")
	}
	endpoint := startMoto(t, bin)
	client := ec2.New(ec2.Options{
		Region:       "me-central-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing", ""),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Load(ctx, client, "me-central-1")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"p5en.48xlarge": true, "g5.xlarge": true, "c7i.large": true, "g6e.xlarge": true, "p5.48xlarge": false} {
		it, ok := c.Lookup(name)
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if got := len(it.ZoneIDs) > 0; got != want {
			t.Errorf("%s offered = %v (zones %v), want %v", name, got, it.ZoneIDs, want)
		}
		if want && (!it.Live || !strings.HasPrefix(it.ZoneIDs[0], "mec1-az")) {
			t.Errorf("%s: live %v zones %v", name, it.Live, it.ZoneIDs)
		}
	}
	p5en, _ := c.Lookup("p5en.48xlarge")
	if p5en.GPU == nil || p5en.GPU.Model != "H200" || p5en.GPU.Count != 8 || p5en.GPU.PeakBF16TFLOPS != 989 || !p5en.EFA.Supported {
		t.Errorf("p5en.48xlarge = %+v", p5en.GPU)
	}
	if len(p5en.ZoneNames) == 0 {
		t.Error("no zone names recorded")
	}

	// Candidates: EC2 gives no GPUs to a type the embedded data lists
	// without, and the candidates' catalog answers GPU filters as the whole
	// one does.
	base := embedded(t)
	for _, n := range base.Names() {
		b, _ := base.Lookup(n)
		if l, _ := c.Lookup(n); b.GPU == nil && l.GPU != nil {
			t.Errorf("%s: EC2 reports %+v, the embedded data no GPUs", n, *l.GPU)
		}
	}
	for count := 1; count <= 8; count++ {
		f := Filter{MinGPUCount: count, OfferedOnly: true}
		names, _ := base.Candidates(f)
		src := &Source{API: client, Region: "me-central-1", ZoneNames: func(ctx context.Context) (map[string]string, error) { return describeZoneNames(ctx, client) }}
		part, err := src.LoadTypes(ctx, names...)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := part.Find(f), c.Find(f); !reflect.DeepEqual(got, want) || len(want) == 0 {
			t.Errorf("at least %d GPUs: the candidates' catalog finds %v, the whole catalog %v", count, typeNames(got), typeNames(want))
		}
	}
}

func startMoto(t *testing.T, bin string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("moto_server log:\n%s", log.String())
		}
	})
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(endpoint + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			return endpoint
		}
		select {
		case <-done:
			t.Fatalf("moto_server exited:\n%s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto_server did not answer on %s: %v", endpoint, err) // the cleanup prints its log
		}
		time.Sleep(100 * time.Millisecond)
	}
}
