package bench

import (
	"fmt"
	"math"
	"unsafe"
)

// The GPU results are checked as the CPU ones are: a GPU that computes
// garbage fast must not pass. A sample of every GEMM product is compared
// with a host reference computed from the same inputs, and every rank's
// all-reduce output with the sum of what the ranks sent.

// download copies n bytes at device address p (plus off) to the host.
func (g *gpuRun) download(p uintptr, off, n uint64) ([]byte, error) {
	host := make([]byte, n)
	if err := g.rt.check("cudaMemcpy", g.rt.memcpy(uintptr(unsafe.Pointer(&host[0])), p+uintptr(off), n, cudaMemcpyDeviceToHost)); err != nil {
		return nil, err
	}
	return host, nil
}

// elem decodes element i of a little-endian buffer of the given precision.
func elem(prec string, b []byte, i int) float32 {
	switch prec {
	case "fp8":
		return fromE4M3(b[i])
	case "fp16":
		return fromFP16(uint16(b[2*i]) | uint16(b[2*i+1])<<8)
	default:
		return fromBF16(uint32(b[2*i]) | uint32(b[2*i+1])<<8)
	}
}

// fromFP16 decodes an IEEE half.
func fromFP16(h uint16) float32 {
	sign := float32(1)
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10&0x1f), float64(h&0x3ff)
	switch e {
	case 0:
		return sign * float32(m*math.Pow(2, -24))
	case 31:
		if m == 0 {
			return sign * float32(math.Inf(1))
		}
		return float32(math.NaN())
	}
	return sign * float32((1+m/1024)*math.Pow(2, float64(e-15)))
}

// fromE4M3 decodes an FP8 E4M3 (OCP "fn" variant: no infinities, S.1111.111 is NaN).
func fromE4M3(b byte) float32 {
	sign := float32(1)
	if b&0x80 != 0 {
		sign = -1
	}
	e, m := int(b>>3&0xf), float64(b&7)
	if e == 15 && m == 7 {
		return float32(math.NaN())
	}
	if e == 0 {
		return sign * float32(m/8*math.Pow(2, -6))
	}
	return sign * float32((1+m/8)*math.Pow(2, float64(e-7)))
}

// checkGemmProduct compares a sample of D = A^T B (n x n x n; A and B k x n
// column-major, as uploaded; D n x n column-major in outPrec) with a host
// reference in float64. The tolerance allows the output rounding of the
// output type and a fraction of sum|a*b| for the accumulation order (and,
// for fp8, the reduced-precision accumulation of some tensor cores).
func (g *gpuRun) checkGemmProduct(dst uintptr, a, b []byte, inPrec string, n int) error {
	_, outType, _ := gemmType(inPrec)
	outPrec, outRel := "bf16", math.Pow(2, -7)
	if outType == cudaR16F {
		outPrec, outRel = "fp16", math.Pow(2, -10)
	}
	accRel := math.Pow(2, -12)
	if inPrec == "fp8" {
		accRel = math.Pow(2, -9)
	}
	const cols, rows = 6, 48
	bad, checked := 0, 0
	var first string
	for cj := range cols {
		j := (cj*(n-1) + cj*cj*7) % n
		col, err := g.download(dst, uint64(2*j*n), uint64(2*n))
		if err != nil {
			return err
		}
		for ri := range rows {
			i := (ri*(n-1)/max(rows-1, 1) + ri*13) % n
			var ref, abs float64
			for p := range n {
				x := float64(elem(inPrec, a, p+i*n)) * float64(elem(inPrec, b, p+j*n))
				ref += x
				abs += math.Abs(x)
			}
			got := float64(elem(outPrec, col, i))
			checked++
			if d := math.Abs(got - ref); !(d <= outRel*math.Abs(ref)+accRel*abs+1e-6) {
				bad++
				if first == "" {
					first = fmt.Sprintf("D[%d,%d] = %g, reference %g", i, j, got, ref)
				}
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d sampled elements wrong, first %s", bad, checked, first)
	}
	return nil
}

// allReduceFill is the byte each rank's send buffer is filled with: ranks
// send different values, so a rank left out of the sum shows.
func allReduceFill(rank int) byte { return 0x3c + byte(rank%8) }

// checkAllReduce checks the start, middle and end of every rank's receive
// buffer against the sum of the ranks' fill values.
func (g *gpuRun) checkAllReduce(recv []uintptr, bytes uint64) error {
	var want float64
	for i := range recv {
		f := allReduceFill(i)
		want += float64(math.Float32frombits(uint32(f) * 0x01010101))
	}
	const chunk = 4096
	for i, r := range recv {
		if err := g.rt.check("cudaSetDevice", g.rt.setDevice(int32(i))); err != nil {
			return err
		}
		for _, off := range []uint64{0, (bytes / 2) &^ 3, bytes - min(bytes, chunk)} {
			buf, err := g.download(r, off, min(bytes, chunk))
			if err != nil {
				return err
			}
			for e := 0; e+4 <= len(buf); e += 4 {
				got := float64(math.Float32frombits(uint32(buf[e]) | uint32(buf[e+1])<<8 | uint32(buf[e+2])<<16 | uint32(buf[e+3])<<24))
				if !(math.Abs(got-want) <= 1e-5*math.Abs(want)) {
					return fmt.Errorf("rank %d element %d = %g, want the sum %g", i, (off+uint64(e))/4, got, want)
				}
			}
		}
	}
	return nil
}
