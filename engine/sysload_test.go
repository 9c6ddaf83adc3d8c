package engine

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// procRoot is a directory of the files Linux gives a process's figures
// in, written by a test.
type procRoot string

func newProcRoot(t *testing.T) procRoot { return procRoot(t.TempDir()) }

// write writes content to the file at rel under the root.
func (d procRoot) write(t *testing.T, rel, content string) {
	t.Helper()
	path := filepath.Join(string(d), rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cpuTicks writes /proc/self/stat with user and system CPU times in clock
// ticks, under a command name with spaces and parentheses.
func (d procRoot) cpuTicks(t *testing.T, user, system int64) {
	t.Helper()
	d.write(t, "proc/self/stat", fmt.Sprintf("4242 (my (app) x) S 1 4242 4242 0 -1 4194560 120 0 3 0 %d %d 0 0 20 0 9 0 777 1000 20\n", user, system))
}

func (d procRoot) files() procFiles { return procFiles{root: string(d)} }

// TestSystemCPUQuota: the quota is the cgroup v2 cpu.max, else the
// cgroup v1 quota over its period, else (no file, or no limit) the CPUs;
// never more than the CPUs.
func TestSystemCPUQuota(t *testing.T) {
	cpus := float64(runtime.NumCPU())
	tests := []struct {
		name  string
		files map[string]string
		want  float64
	}{
		{"v2 half a CPU", map[string]string{"sys/fs/cgroup/cpu.max": "50000 100000\n"}, 0.5},
		{"v2 no limit", map[string]string{"sys/fs/cgroup/cpu.max": "max 100000\n"}, cpus},
		{"v2 over the CPUs", map[string]string{"sys/fs/cgroup/cpu.max": fmt.Sprintf("%d 100000\n", 100000*(runtime.NumCPU()+4))}, cpus},
		{"v2 before v1", map[string]string{"sys/fs/cgroup/cpu.max": "25000 100000\n",
			"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "50000\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, 0.25},
		{"v1 half a CPU", map[string]string{"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "50000\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, 0.5},
		{"v1 cpu,cpuacct", map[string]string{"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "20000\n", "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n"}, 0.2},
		{"v1 no limit", map[string]string{"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1\n", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n"}, cpus},
		{"no quota file", nil, cpus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newProcRoot(t)
			for rel, content := range tt.files {
				root.write(t, rel, content)
			}
			if got := root.files().cpuQuota(); got != tt.want {
				t.Fatalf("quota %v CPUs, want %v", got, tt.want)
			}
		})
	}
}

// TestSystemSamplerCPUUsage: the CPU usage is the process's CPU time since
// the last sample over the time since, by the engine's clock, as a ratio
// of the quota; a sample at the same time changes nothing.
func TestSystemSamplerCPUUsage(t *testing.T) {
	tests := []struct {
		name  string
		quota map[string]string
		// ticks is the CPU time used over the second, user and system.
		user, system int64
		want         float64
	}{
		{"v2, half a CPU, all of it", map[string]string{"sys/fs/cgroup/cpu.max": "50000 100000"}, 30, 20, 1},
		{"v2, half a CPU, a fifth of it", map[string]string{"sys/fs/cgroup/cpu.max": "50000 100000"}, 10, 0, 0.2},
		{"v1, half a CPU, 80%", map[string]string{"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "50000",
			"sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000"}, 20, 20, 0.8},
		{"no quota", nil, 50, 0, 0.5 / float64(runtime.NumCPU())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newProcRoot(t)
			for rel, content := range tt.quota {
				root.write(t, rel, content)
			}
			root.cpuTicks(t, 500, 300)
			clock := NewManualClock(10_000)
			s := &sampler{files: root.files(), clock: clock}
			s.sample()
			if s.cpu() != 0 {
				t.Fatalf("usage %v after one sample, want 0", s.cpu())
			}
			root.cpuTicks(t, 500+tt.user, 300+tt.system)
			clock.Advance(1000)
			s.sample()
			if got := s.cpu(); math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("usage %v, want %v", got, tt.want)
			}
			root.cpuTicks(t, 10_000, 10_000)
			s.sample()
			if got := s.cpu(); math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("a sample at the same time changed the usage to %v", got)
			}
		})
	}
}

// TestSystemSamplerLoadPerCPU: the load is /proc/loadavg's one-minute
// figure over the CPUs; a missing or bad file leaves the last reading.
func TestSystemSamplerLoadPerCPU(t *testing.T) {
	root := newProcRoot(t)
	clock := NewManualClock(0)
	s := &sampler{files: root.files(), clock: clock}
	s.sample()
	if s.loadAvg() != 0 {
		t.Fatalf("load %v without /proc/loadavg, want 0", s.loadAvg())
	}
	cpus := float64(runtime.NumCPU())
	root.write(t, "proc/loadavg", fmt.Sprintf("%.2f 1.00 0.50 3/512 4242\n", 3*cpus))
	clock.Advance(1000)
	s.sample()
	if got := s.loadAvg(); math.Abs(got-3) > 1e-9 {
		t.Fatalf("load per CPU %v, want 3", got)
	}
	root.write(t, "proc/loadavg", "garbage\n")
	clock.Advance(1000)
	s.sample()
	if got := s.loadAvg(); math.Abs(got-3) > 1e-9 {
		t.Fatalf("a bad file changed the load to %v", got)
	}
}
