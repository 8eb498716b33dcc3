package harness

import "time"

// Percentile is the p-th (0 to 1) of sorted durations by nearest rank,
// or 0 of none: both reports give their latencies so, so that a p99 of
// one run reads as a p99 of the other.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
