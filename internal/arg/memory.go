package arg

import "strconv"

// Memory parses a memory size as Redis's configuration does: an integer of
// bytes, optionally followed by a unit, case-insensitively: k (1000), kb
// (1024), m, mb, g, gb. Negative sizes and overflow are refused.
func Memory(s string) (int64, bool) {
	units := []struct {
		suffix string
		mul    int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}, {"b", 1}}
	mul := int64(1)
	num := s
	for _, u := range units {
		if n := len(s) - len(u.suffix); n > 0 && EqualFold([]byte(s[n:]), u.suffix) {
			num, mul = s[:n], u.mul
			break
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v < 0 || v > (1<<63-1)/mul {
		return 0, false
	}
	return v * mul, true
}
