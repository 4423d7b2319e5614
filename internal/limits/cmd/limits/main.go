// Command limits prints what breaks issue 22's limits in the module whose
// root is the working directory (go run ./internal/limits/cmd/limits):
// receiver types over 25 methods in dispatch/ and proxy/ and over 35
// elsewhere (the emulators and contract suites aside), production files
// over 400 lines and functions over 80, then the largest of each.
package main

import (
	"fmt"
	"os"

	"github.com/llmfleet/llmfleet/internal/limits"
)

func main() {
	f, err := limits.Measure(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	v := limits.Check(f)
	for _, line := range v {
		fmt.Println(line)
	}
	fmt.Printf("%d over the limits; largest: type %s, file %s, function %s\n", len(v),
		first(limits.Over(f.Methods, 0, nil)), first(limits.Over(f.Files, 0, nil)), first(limits.Over(f.Funcs, 0, nil)))
}

func first(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return s[0]
}
