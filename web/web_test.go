package web

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"
)

// TestNoMarkupFromStrings keeps the console safe by construction: its own
// scripts never turn strings into markup, so user data (rule and resource
// names, descriptions) can only ever be text. The vendored chart library is
// checked too.
func TestNoMarkupFromStrings(t *testing.T) {
	sinks := regexp.MustCompile(`\.innerHTML\b|\.outerHTML\b|insertAdjacentHTML|document\.write|createContextualFragment|DOMParser|\beval\(|new Function\(|setAttribute\(\s*['"]style['"]`)
	err := fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".js") {
			return err
		}
		src, err := fs.ReadFile(FS, path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if m := sinks.FindString(line); m != "" {
				t.Errorf("%s:%d uses %s: build elements with the DOM (dom.js h) and text with textContent", path, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestVendoredChartLibrary checks that uPlot is there with its licence and
// the version the refresh script pinned.
func TestVendoredChartLibrary(t *testing.T) {
	for _, name := range []string{"vendor/uplot/uPlot.esm.js", "vendor/uplot/uPlot.min.css", "vendor/uplot/LICENSE", "vendor/uplot/VERSION"} {
		if _, err := fs.Stat(FS, name); err != nil {
			t.Errorf("%s: %v (run scripts/vendor-uplot.sh)", name, err)
		}
	}
	license, err := fs.ReadFile(FS, "vendor/uplot/LICENSE")
	if err == nil && !strings.Contains(string(license), "MIT License") {
		t.Errorf("vendor/uplot/LICENSE is not uPlot's MIT licence")
	}
}

// TestModulePreload keeps index.html's modulepreload links the console's
// whole module graph, from js/app.js: a module missing from them is
// fetched only once the module importing it is parsed, a round more for
// the page load (docs/performance.md), and a link to a module no longer
// imported fetches it for nothing.
func TestModulePreload(t *testing.T) {
	index, err := fs.ReadFile(FS, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	preloaded := map[string]bool{}
	for _, m := range regexp.MustCompile(`<link rel="modulepreload" href="/([^"]+)">`).FindAllStringSubmatch(string(index), -1) {
		preloaded[m[1]] = true
	}
	imports := regexp.MustCompile(`(?:from|import)\s+'([^']+)'`)
	graph := map[string]bool{}
	queue := []string{"js/app.js"}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if graph[name] {
			continue
		}
		graph[name] = true
		src, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, m := range imports.FindAllStringSubmatch(string(src), -1) {
			queue = append(queue, path.Join(path.Dir(name), m[1]))
		}
	}
	delete(graph, "js/app.js") // the page's own script tag fetches it
	for name := range graph {
		if !preloaded[name] {
			t.Errorf("index.html has no modulepreload link to /%s, which js/app.js imports", name)
		}
	}
	for name := range preloaded {
		if !graph[name] {
			t.Errorf("index.html preloads /%s, which js/app.js does not import", name)
		}
	}
}
