package benchmarks

import (
	"github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/config"
	"github.com/alibaba/sentinel-golang/logging"
)

// InitSentinel initialises sentinel-golang's global state for a comparison.
// Call it once per process, before any other sentinel-golang call.
//
// sentinel-golang's record log is written to logDir (give it a temporary
// directory, never the repository) and only from warning level up. The
// background tasks that no Entry depends on are switched off so that they
// add no noise to either engine's figures: the metric log writer (a flush
// interval of 0 disables it) and the system load, CPU and memory collectors
// (intervals of 0). Everything else, the clock included (useCacheTime is
// off by default), keeps sentinel-golang's defaults.
func InitSentinel(logDir string) error {
	logging.ResetGlobalLoggerLevel(logging.WarnLevel)
	conf := config.NewDefaultConfig()
	conf.Sentinel.App.Name = "sluice-benchmarks"
	conf.Sentinel.Log.Dir = logDir
	conf.Sentinel.Log.Metric.FlushIntervalSec = 0
	conf.Sentinel.Stat.System.CollectIntervalMs = 0
	conf.Sentinel.Stat.System.CollectLoadIntervalMs = 0
	conf.Sentinel.Stat.System.CollectCpuIntervalMs = 0
	conf.Sentinel.Stat.System.CollectMemoryIntervalMs = 0
	return api.InitWithConfig(conf)
}
