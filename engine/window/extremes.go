package window

// Max returns the largest count of ev in one of the buckets Sum covers.
func (la *LeapArray) Max(nowMs int64, ev Event) int64 {
	var most int64
	for i := range la.buckets {
		b := &la.buckets[i]
		if s := b.start.Load(); s > nowMs-la.intervalMs && s <= nowMs {
			most = max(most, b.counters[ev].Load())
		}
	}
	return most
}

// MinRt returns the least response time kept beside the buckets Sum
// covers, and false if no call completed in them or the window keeps no
// extremes (KeepExtremes).
func (la *LeapArray) MinRt(nowMs int64) (int64, bool) {
	least := int64(noRt)
	for i := range la.extremes {
		if s := la.buckets[i].start.Load(); s > nowMs-la.intervalMs && s <= nowMs {
			least = min(least, la.extremes[i].minRtMs())
		}
	}
	return least, least != noRt
}
