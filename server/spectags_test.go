package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestSpecFieldTags holds the tags by which swag documents the API's
// fields as generated clients need them (docs/development.md): a time is a
// date-time, a float64 a double (not a generator's default float32), and
// a pointer the server may send as null is nullable unless
// it is a request field a client may leave out (validate:"optional"). It
// reads the sources of the packages swag documents.
func TestSpecFieldTags(t *testing.T) {
	var files []string
	for _, dir := range []string{".", "rules", "../engine/wire"} {
		found, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			field, ok := n.(*ast.Field)
			if !ok || field.Tag == nil || len(field.Names) == 0 {
				return true
			}
			tag := reflect.StructTag(strings.Trim(field.Tag.Value, "`"))
			name, opts, _ := strings.Cut(tag.Get("json"), ",")
			if name == "" || name == "-" {
				return true
			}
			star, pointer := field.Type.(*ast.StarExpr)
			typ := field.Type
			if pointer {
				typ = star.X
			}
			where := fset.Position(field.Pos())
			if sel, ok := typ.(*ast.SelectorExpr); ok && sel.Sel.Name == "Time" && tag.Get("format") != "date-time" {
				t.Errorf("%s: %s is a time without format:\"date-time\"", where, field.Names[0])
			}
			if ident, ok := typ.(*ast.Ident); ok && ident.Name == "float64" && tag.Get("format") != "double" {
				t.Errorf("%s: %s is a float64 without format:\"double\"", where, field.Names[0])
			}
			if pointer && !strings.Contains(opts, "omitempty") && tag.Get("validate") != "optional" && tag.Get("extensions") != "x-nullable" {
				t.Errorf("%s: %s is a pointer sent as null without extensions:\"x-nullable\"", where, field.Names[0])
			}
			return true
		})
	}
}
