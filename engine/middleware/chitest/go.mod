module github.com/sluicehq/sluice/engine/middleware/chitest

go 1.26.0

require (
	github.com/go-chi/chi/v5 v5.5.0
	github.com/sluicehq/sluice v0.0.0
)

replace github.com/sluicehq/sluice => ../../..
