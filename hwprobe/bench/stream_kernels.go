package bench

// streamImpl holds the four STREAM kernels over float64 arrays of a length
// that is a multiple of align.
type streamImpl struct {
	name  string
	align int
	copy  func(dst, src []float64)
	scale func(dst, src []float64, s float64)
	add   func(dst, x, y []float64)
	triad func(dst, x, y []float64, s float64)
}

// genericStream is the portable Go implementation.
func genericStream() streamImpl {
	return streamImpl{
		name:  "go",
		align: 1,
		copy:  func(d, s []float64) { copy(d, s) },
		scale: func(d, s []float64, q float64) {
			s = s[:len(d)]
			for i := range d {
				d[i] = q * s[i]
			}
		},
		add: func(d, x, y []float64) {
			x, y = x[:len(d)], y[:len(d)]
			for i := range d {
				d[i] = x[i] + y[i]
			}
		},
		triad: func(d, x, y []float64, q float64) {
			x, y = x[:len(d)], y[:len(d)]
			for i := range d {
				d[i] = x[i] + q*y[i]
			}
		},
	}
}
