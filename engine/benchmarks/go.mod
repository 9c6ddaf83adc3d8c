module github.com/sluicehq/sluice/engine/benchmarks

go 1.26.0

require github.com/sluicehq/sluice v0.0.0

require github.com/alibaba/sentinel-golang v1.0.4 // indirect

replace github.com/sluicehq/sluice => ../..
