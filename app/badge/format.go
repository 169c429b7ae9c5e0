package badge

import (
	"fmt"
	"strconv"
)

// metricPrefixes covers int64: its largest magnitude, about 9.2e18, is
// "9.2E", so no larger prefix is ever needed.
var metricPrefixes = [...]string{"k", "M", "G", "T", "P", "E"}

// FormatValue renders a counter value for a badge:
//
//	"" or "plain"     12345 -> "12345"
//	"comma"           12345 -> "12,345"
//	"space"           12345 -> "12 345"
//	"short", "metric" 1234 -> "1.2k", 12345 -> "12k", 1234567 -> "1.2M"
//
// "short" follows shields.io's metric() exactly: one decimal only while the
// scaled value is below 10 and the decimal is not 0, otherwise a whole number
// (so 12345 is "12k", not "12.3k"), rounding half away from zero. Negative
// values keep their sign in every format. Any other format is an error.
func FormatValue(v int64, format string) (string, error) {
	switch format {
	case "", "plain":
		return strconv.FormatInt(v, 10), nil
	case "comma":
		return group(v, ','), nil
	case "space":
		return group(v, ' '), nil
	case "short", "metric":
		return metric(v), nil
	}
	return "", fmt.Errorf("badge: unknown value format %q: use plain, comma, space or short", format)
}

// magnitude returns |v| as a uint64, which, unlike int64, can hold
// |math.MinInt64|.
func magnitude(v int64) (abs uint64, neg bool) {
	if v < 0 {
		return uint64(-(v + 1)) + 1, true
	}
	return uint64(v), false
}

// group writes v with sep between groups of three digits.
func group(v int64, sep byte) string {
	abs, neg := magnitude(v)
	digits := strconv.FormatUint(abs, 10)
	out := make([]byte, 0, len(digits)+len(digits)/3+1)
	if neg {
		out = append(out, '-')
	}
	for i := 0; i < len(digits); i++ {
		if i > 0 && (len(digits)-i)%3 == 0 {
			out = append(out, sep)
		}
		out = append(out, digits[i])
	}
	return string(out)
}

// metric is shields' metric() in integer arithmetic, so values near the int64
// limits round exactly instead of through float64.
func metric(v int64) string {
	abs, neg := magnitude(v)
	sign := ""
	if neg {
		sign = "-"
	}
	limit := uint64(1)
	i := -1
	for i+1 < len(metricPrefixes) && abs >= limit*1000 {
		limit *= 1000
		i++
	}
	if i < 0 {
		return strconv.FormatInt(v, 10)
	}
	// tenths is abs/limit rounded half up to one decimal place. limit/20 and
	// limit/10 are exact because limit is a multiple of 1000, and the sum
	// cannot overflow: abs <= 2^63 and limit/20 <= 5e16.
	tenths := (abs + limit/20) / (limit / 10)
	if abs < 10*limit && tenths%10 != 0 {
		return fmt.Sprintf("%s%d.%d%s", sign, tenths/10, tenths%10, metricPrefixes[i])
	}
	rounded := (abs + limit/2) / limit
	if rounded >= 1000 && i+1 < len(metricPrefixes) {
		return sign + "1" + metricPrefixes[i+1]
	}
	return fmt.Sprintf("%s%d%s", sign, rounded, metricPrefixes[i])
}
