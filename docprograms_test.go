package sluice_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDocProgramsBuild builds every Go block of README.md and docs/*.md
// that is a complete program (it starts with package main), so that a
// snippet a reader copies compiles as written. Each is built, through an
// overlay that writes nothing into the repository, in the module that
// provides its imports: the nested module whose path is the longest
// prefix of one of them (engine/middleware/ginmw for a gin program), else
// the root module. The embedding snippet the README points to is one.
func TestDocProgramsBuild(t *testing.T) {
	modules := moduleDirs(t)
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	programs := map[string]int{}
	for _, page := range append([]string{"README.md"}, pages...) {
		for _, block := range goBlocks(t, page) {
			if !strings.HasPrefix(block.code, "package main\n") {
				continue
			}
			programs[page]++
			name := page + ":" + strconv.Itoa(block.line)
			t.Run(name, func(t *testing.T) {
				file, err := parser.ParseFile(token.NewFileSet(), name, block.code, parser.ImportsOnly)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				dir, best := ".", ""
				for _, imp := range file.Imports {
					path, _ := strconv.Unquote(imp.Path.Value)
					for module, moduleDir := range modules {
						if (path == module || strings.HasPrefix(path, module+"/")) && len(module) > len(best) {
							dir, best = moduleDir, module
						}
					}
				}
				buildOverlaid(t, dir, block.code)
			})
		}
	}
	// The README sends embedders to docs/engine.md's "Use", which must be
	// one of them.
	if programs["docs/engine.md"] == 0 {
		t.Error("docs/engine.md has no complete program: its embedding snippet is built only as one")
	}
}

// codeBlock is a fenced Go block of a Markdown page and the line it
// starts on.
type codeBlock struct {
	code string
	line int
}

// goBlocks answers the ```go blocks of the Markdown page at path.
func goBlocks(t *testing.T, path string) []codeBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []codeBlock
	var current *codeBlock
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		switch {
		case current == nil && line == "```go":
			current = &codeBlock{line: n + 1}
		case current != nil && line == "```":
			blocks = append(blocks, *current)
			current = nil
		case current != nil:
			current.code += line + "\n"
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// moduleDirs answers the directory of each module of the repository by
// its path: the root and the nested ones.
func moduleDirs(t *testing.T) map[string]string {
	t.Helper()
	dirs := map[string]string{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for line := range strings.Lines(string(data)) {
			if module, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
				dirs[module] = filepath.Dir(path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// buildOverlaid builds code as package main of a directory of the module
// in dir that does not exist: go build's overlay supplies its one file.
func buildOverlaid(t *testing.T, dir, code string) {
	t.Helper()
	tmp := t.TempDir()
	source := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(source, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{
		"Replace": {filepath.Join(abs, "zz_docprogram", "main.go"): source},
	})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	// A copy of the module's go.mod and go.sum, which the build may
	// complete (a program imports a package of a dependency the module's
	// own code does not): the repository's stay as they are.
	for _, name := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), "go", "build", "-overlay", overlayFile,
		"-modfile", filepath.Join(tmp, "go.mod"), "-mod", "mod", "-o", os.DevNull, "./zz_docprogram")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go build in %s: %v\n%s", dir, err, out)
	}
}
