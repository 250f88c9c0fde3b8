package bench

import (
	"strconv"
	"strings"
)

// pathInMaps finds the file mapped at addr in the text of /proc/PID/maps
// ("start-end perms offset dev inode path" per line, addresses in hex).
func pathInMaps(maps string, addr uint64) string {
	for line := range strings.Lines(maps) {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || addr < start || addr >= end {
			continue
		}
		// A path may hold spaces: it is everything after the inode.
		_, path, _ := strings.Cut(strings.TrimRight(line, "\n"), " /")
		return "/" + strings.TrimSuffix(path, " (deleted)")
	}
	return ""
}
