package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// retentionFlag is a --metrics-retention value: a Go duration ("720h") or
// a whole number of days ("30d").
type retentionFlag time.Duration

// String writes whole days as days.
func (r *retentionFlag) String() string {
	d := time.Duration(*r)
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// Set parses a duration or days; it must be positive.
func (r *retentionFlag) Set(s string) error {
	d, err := parseRetention(s)
	if err != nil {
		return err
	}
	*r = retentionFlag(d)
	return nil
}

func parseRetention(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > int64(time.Duration(1<<63-1)/(24*time.Hour)) {
			return 0, fmt.Errorf("%q: want a whole number of days (30d) or a Go duration (720h)", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q: want a whole number of days (30d) or a Go duration (720h)", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: must be more than zero", s)
	}
	return d, nil
}
