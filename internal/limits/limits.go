// Package limits measures the code's shape from its syntax: the methods
// of each receiver type, the lines of each file and of each function, in
// the production (non-test) Go files of a module. Issue 22's limits are
// checked with it (see TestLimits in the module root and
// "go run ./internal/limits").
package limits

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Figures are a tree's measurements.
type Figures struct {
	// Methods counts the methods of each receiver type, by "dir.Type".
	Methods map[string]int
	// Files are the lines of each production file, by path.
	Files map[string]int
	// Funcs are the lines of each function or method, by "path:Name".
	Funcs map[string]int
}

// Measure reads the production Go files under root (tests, testdata and
// hidden or underscore directories left out).
func Measure(root string) (Figures, error) {
	f := Figures{Methods: map[string]int{}, Files: map[string]int{}, Funcs: map[string]int{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		file, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		f.Files[rel] = lineCount(src)
		dir := filepath.Dir(rel)
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			key := rel + ":" + fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				t := recvType(fn.Recv.List[0].Type)
				key = rel + ":" + t + "." + fn.Name.Name
				f.Methods[dir+"."+t]++
			}
			f.Funcs[key] = lines
		}
		return nil
	})
	return f, err
}

// lineCount returns the lines of src, a last line without its newline
// included: trailing comments and blank lines count, as an editor shows.
func lineCount(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// recvType returns the name of a receiver's type.
func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// Over returns the entries of m over limit, largest first, as
// "key: value".
func Over(m map[string]int, limit int, skip func(string) bool) []string {
	type kv struct {
		k string
		v int
	}
	var out []kv
	for k, v := range m {
		if v > limit && (skip == nil || !skip(k)) {
			out = append(out, kv{k, v})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].v != out[j].v {
			return out[i].v > out[j].v
		}
		return out[i].k < out[j].k
	})
	s := make([]string, len(out))
	for i, e := range out {
		s[i] = e.k + ": " + strconv.Itoa(e.v)
	}
	return s
}

// The limits of issue 22.
const (
	MaxMethodsCore = 25  // receiver types in dispatch/ and proxy/
	MaxMethods     = 35  // other production types
	MaxFileLines   = 400 // production files
	MaxFuncLines   = 80  // production functions
)

// exempt are the directories whose types may have more methods: the
// provider emulators and the contract suites.
var exempt = []string{"emulator", "openaiemu", "geminiemu", "storetest", "providertest"}

// Check returns what in f breaks the limits, one line each.
func Check(f Figures) []string {
	var out []string
	core := func(k string) bool {
		return strings.HasPrefix(k, "dispatch.") || strings.HasPrefix(k, "proxy.")
	}
	for _, l := range Over(f.Methods, MaxMethodsCore, func(k string) bool { return !core(k) }) {
		out = append(out, "methods "+l)
	}
	for _, l := range Over(f.Methods, MaxMethods, func(k string) bool {
		if core(k) {
			return true
		}
		for _, e := range exempt {
			if strings.HasPrefix(k, e+".") || strings.Contains(k, "/"+e+".") {
				return true
			}
		}
		return false
	}) {
		out = append(out, "methods "+l)
	}
	for _, l := range Over(f.Files, MaxFileLines, nil) {
		out = append(out, "file "+l)
	}
	for _, l := range Over(f.Funcs, MaxFuncLines, nil) {
		out = append(out, "func "+l)
	}
	return out
}
