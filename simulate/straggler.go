package simulate

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseStraggler reads the --straggler flag's value, "FRACTION:FACTORx"
// (e.g. "0.05:10x": 5% of batches take 10 times their turnaround); ""
// means none. llmfleet simulate, llmfleet emulate and llmfleet-bench economics read
// it with this one function.
func ParseStraggler(s string) (Straggler, error) {
	if s == "" {
		return Straggler{}, nil
	}
	fr, fa, ok := strings.Cut(s, ":")
	frac, err1 := strconv.ParseFloat(fr, 64)
	fact, err2 := strconv.ParseFloat(strings.TrimSuffix(fa, "x"), 64)
	if !ok || err1 != nil || err2 != nil || frac < 0 || frac > 1 || fact < 1 {
		return Straggler{}, fmt.Errorf("straggler %q is not FRACTION:FACTORx (e.g. 0.05:10x)", s)
	}
	return Straggler{Fraction: frac, Factor: fact}, nil
}
