package limits

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// write writes a Go file of package pkg under root.
func write(t *testing.T, root, path, body string) {
	t.Helper()
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// methods returns n methods of type T.
func methods(n int) string {
	var b strings.Builder
	b.WriteString("type T struct{}\n")
	for i := range n {
		b.WriteString("func (*T) M" + string(rune('a'+i/26)) + string(rune('a'+i%26)) + "() {}\n")
	}
	return b.String()
}

func TestMeasureAndCheck(t *testing.T) {
	root := t.TempDir()
	long := "func long() {\n" + strings.Repeat("\t_ = 0\n", 79) + "}\n"         // 81 lines
	short := "func short() {\n" + strings.Repeat("\t_ = 0\n", 78) + "}\n"       // 80 lines
	write(t, root, "a/a.go", "package a\n\n"+long+short)                        // 163 lines
	write(t, root, "a/big.go", "package a\n"+strings.Repeat("\n", 400))         // 401 lines
	write(t, root, "a/a_test.go", "package a\n"+strings.Repeat("\n", 500)+long) // a test: not measured
	write(t, root, "b/b.go", "package b\n"+methods(36))
	write(t, root, "c/c.go", "package c\n"+methods(35))
	write(t, root, "dispatch/d.go", "package dispatch\n"+methods(26))
	write(t, root, "proxy/p.go", "package proxy\n"+methods(25))
	write(t, root, "emulator/e.go", "package emulator\n"+methods(40))
	write(t, root, "testdata/x.go", "package x\n"+strings.Repeat("\n", 500))

	f, err := Measure(root)
	if err != nil {
		t.Fatal(err)
	}
	if f.Files[filepath.Join("a", "a.go")] != 163 || f.Funcs[filepath.Join("a", "a.go")+":long"] != 81 {
		t.Errorf("measured %v, %v", f.Files, f.Funcs)
	}
	if f.Methods["b.T"] != 36 || f.Methods["dispatch.T"] != 26 {
		t.Errorf("methods %v", f.Methods)
	}
	got := Check(f)
	want := []string{
		"methods dispatch.T: 26",
		"methods b.T: 36",
		"file " + filepath.Join("a", "big.go") + ": 401",
		"func " + filepath.Join("a", "a.go") + ":long: 81",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Check =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
