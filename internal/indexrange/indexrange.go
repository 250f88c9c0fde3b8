// Package indexrange writes and reads sets of node indices as ranges
// ("0-3,7,9-10"): the form of the GPU cluster's node-indices tag, which the
// provider writes at launch and a node reads to learn its own index. Pure.
package indexrange

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Format writes sorted, de-duplicated indices as ranges: 0-3,7,9-10.
func Format(indices []int) string {
	s := slices.Clone(indices)
	sort.Ints(s)
	s = slices.Compact(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Parse reads what Format writes.
func Parse(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("node indices %q: bad index %q", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 100000 {
				return nil, fmt.Errorf("node indices %q: bad range %q", s, part)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}
