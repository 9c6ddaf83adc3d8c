package server

import (
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/compress"
	"github.com/gofiber/fiber/v2/middleware/etag"
	"github.com/gofiber/fiber/v2/middleware/filesystem"

	"github.com/sluicehq/sluice/web"
)

// consoleCSP is the Content-Security-Policy of the console's files: every
// script, style, image and connection comes from the server itself; no
// inline script, no eval, no plugin, and no page may frame the console. The
// Swagger UI, which needs inline scripts, is served without it.
const consoleCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// bindConsole serves the console's static files at "/", under its
// Content-Security-Policy. Mounted last, it answers whatever the API and
// the Swagger UI did not.
//
// Files go out compressed (brotli or gzip, as the browser accepts; the
// chart library is 146 KB raw) and with an ETag, so that the revalidation
// consoleHeaders asks for costs a 304 and no body. The ETag is taken
// before compression, hence weak: one tag for the file in every encoding,
// which If-None-Match compares weakly; and a 304 has nothing to compress.
func bindConsole(app *fiber.App) {
	app.Use("/", consoleHeaders,
		compress.New(compress.Config{Level: compress.LevelDefault}),
		etag.New(etag.Config{Weak: true}),
		filesystem.New(filesystem.Config{Root: http.FS(web.FS)}))
}

// consoleHeaders sets the console's security policy; the files are always
// revalidated, so an upgraded server is never paired with stale modules.
func consoleHeaders(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentSecurityPolicy, consoleCSP)
	c.Set(fiber.HeaderCacheControl, "no-cache")
	return c.Next()
}
