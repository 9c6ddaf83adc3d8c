package servertest

import "github.com/sluicehq/sluice/engine"

// Option changes how Start starts a server.
type Option func(*options)

type options struct {
	dbPath      string
	addr        string
	engine      engine.Options
	tls         bool
	discardLogs bool
}

// DBPath opens the SQLite file at path instead of a new one in the test's
// temporary directory: a restart on the same database. Optional. Default: a
// new file.
func DBPath(path string) Option { return func(o *options) { o.dbPath = path } }

// Addr listens on addr: a restart on the address of a stopped Node. Optional.
// Default: 127.0.0.1:0, a free port.
func Addr(addr string) Option { return func(o *options) { o.addr = addr } }

// EngineOptions builds the engine with opts (a manual clock, say).
// Optional. Default: engine.Options{}, the real clock.
func EngineOptions(opts engine.Options) Option { return func(o *options) { o.engine = opts } }

// TLS has the Node's clients speak HTTPS and trust a self-signed
// certificate, given in Env for the server to serve. Optional. Default:
// plain HTTP.
func TLS() Option { return func(o *options) { o.tls = true } }

// DiscardLogs drops the server's logs instead of keeping them for Logs:
// benchmarks measure the server, not a growing buffer. Optional. Default:
// kept.
func DiscardLogs() Option { return func(o *options) { o.discardLogs = true } }
