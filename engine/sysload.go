package engine

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// clockTicksPerSecond is the unit of the CPU times of /proc/self/stat
// (USER_HZ), 100 on every Linux architecture Go runs on.
const clockTicksPerSecond = 100

// sampleEvery is how often the engine reads its process's figures while
// a system rule watches one.
const sampleEvery = time.Second

// procFiles reads the figures of the engine's process from the files
// Linux gives them in, under root ("/" in production, a directory of
// their own in tests).
type procFiles struct {
	root string
}

// read returns the content of the file at rel under root.
func (p procFiles) read(rel string) ([]byte, bool) {
	b, err := os.ReadFile(filepath.Join(p.root, rel))
	return b, err == nil
}

// cpuSeconds returns the CPU time the process has used, user and system,
// from /proc/self/stat; false where there is none (not Linux).
func (p procFiles) cpuSeconds() (float64, bool) {
	b, ok := p.read("proc/self/stat")
	if !ok {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: the fields that
	// follow it start with the state, the third; utime is the 14th.
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, false
	}
	fields := strings.Fields(string(b[end+1:]))
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, false
	}
	user, err1 := strconv.ParseInt(fields[utime], 10, 64)
	system, err2 := strconv.ParseInt(fields[stime], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return float64(user+system) / clockTicksPerSecond, true
}

// cpuQuota returns how many CPUs' worth of time the process may use: its
// cgroup's quota (v2 cpu.max, else v1 cpu.cfs_quota_us over
// cpu.cfs_period_us), or the CPUs it may run on when it has none.
func (p procFiles) cpuQuota() float64 {
	cpus := float64(runtime.NumCPU())
	if b, ok := p.read("sys/fs/cgroup/cpu.max"); ok {
		f := strings.Fields(string(b))
		if len(f) == 2 {
			return quotaOf(f[0], f[1], cpus)
		}
		return cpus
	}
	for _, dir := range []string{"sys/fs/cgroup/cpu", "sys/fs/cgroup/cpu,cpuacct"} {
		quota, ok1 := p.read(dir + "/cpu.cfs_quota_us")
		period, ok2 := p.read(dir + "/cpu.cfs_period_us")
		if ok1 && ok2 {
			return quotaOf(strings.TrimSpace(string(quota)), strings.TrimSpace(string(period)), cpus)
		}
	}
	return cpus
}

// quotaOf is a cgroup's CPU quota over its period, in CPUs, at most cpus;
// "max" (v2) or a negative quota (v1, -1) is none: cpus.
func quotaOf(quota, period string, cpus float64) float64 {
	q, err1 := strconv.ParseFloat(quota, 64)
	t, err2 := strconv.ParseFloat(period, 64)
	if err1 != nil || err2 != nil || q <= 0 || t <= 0 {
		return cpus
	}
	return min(q/t, cpus)
}

// loadPerCPU returns the one-minute load average over the CPUs, from
// /proc/loadavg; false where there is none.
func (p procFiles) loadPerCPU() (float64, bool) {
	b, ok := p.read("proc/loadavg")
	if !ok {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	load, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, false
	}
	return load / float64(runtime.NumCPU()), true
}

// sampler keeps the last readings of the process's CPU usage and load,
// which the hot path reads with one atomic load each. The engine runs it
// once a second while a system rule watches either figure, and not at all
// otherwise.
type sampler struct {
	files procFiles
	clock Clock

	cpuUsage atomic.Uint64 // float64 bits: a ratio of the CPU quota
	load     atomic.Uint64 // float64 bits: the load per CPU

	mu      sync.Mutex // one sample at a time; guards the fields below
	lastMs  int64
	lastCPU float64
	primed  bool
	stop    chan struct{} // closed to stop the goroutine, nil when none runs
	stopped sync.WaitGroup
}

// sample reads the figures now. The CPU usage is that of the time since
// the previous sample, by the engine's clock; a sample at the same time
// as the previous one changes nothing.
func (s *sampler) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.NowMs()
	if s.primed && now <= s.lastMs {
		return
	}
	if load, ok := s.files.loadPerCPU(); ok {
		s.load.Store(math.Float64bits(load))
	}
	used, ok := s.files.cpuSeconds()
	if !ok {
		return
	}
	if s.primed {
		elapsed := float64(now-s.lastMs) / 1000
		usage := max(used-s.lastCPU, 0) / (elapsed * s.files.cpuQuota())
		s.cpuUsage.Store(math.Float64bits(usage))
	}
	s.lastMs, s.lastCPU, s.primed = now, used, true
}

// cpu returns the last CPU usage read, a ratio of the CPU quota.
func (s *sampler) cpu() float64 { return math.Float64frombits(s.cpuUsage.Load()) }

// loadAvg returns the last load per CPU read.
func (s *sampler) loadAvg() float64 { return math.Float64frombits(s.load.Load()) }

// start samples at once, then once a second until stopSampling, unless
// it runs already. A start after a stop begins afresh: its first CPU
// usage is that of the second after it.
func (s *sampler) start() {
	s.mu.Lock()
	if s.stop != nil {
		s.mu.Unlock()
		return
	}
	s.primed = false
	s.cpuUsage.Store(0)
	stop := make(chan struct{})
	s.stop = stop
	s.mu.Unlock()
	s.sample()
	s.stopped.Go(func() {
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	})
}

// stopSampling stops the goroutine start began, if any, and waits for it.
func (s *sampler) stopSampling() {
	s.mu.Lock()
	stop := s.stop
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		s.stopped.Wait()
	}
}
