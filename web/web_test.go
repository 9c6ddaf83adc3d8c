package web

import (
	"io/fs"
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
