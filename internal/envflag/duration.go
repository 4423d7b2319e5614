package envflag

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Unitless returns the error of a number without a unit given to the
// duration flag name of fs ("10" for --default-budget): durations need
// one ("10s"). It returns nil for any other flag or value.
func Unitless(fs *flag.FlagSet, name, value string) error {
	f := fs.Lookup(name)
	if f == nil {
		return nil
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return nil
	}
	if _, isDuration := g.Get().(time.Duration); !isDuration {
		return nil
	}
	v := strings.TrimSpace(value)
	if _, err := time.ParseDuration(v); err == nil {
		return nil
	}
	if _, err := strconv.ParseFloat(v, 64); err != nil {
		return nil
	}
	return fmt.Errorf("invalid value %q for flag --%s: a duration needs a unit, e.g. %q (ms, s, m or h)", value, name, v+"s")
}

// checkUnits returns the Unitless error of the first duration flag of
// args given a number without a unit, before fs parses them (whose own
// error would only say "parse error").
func checkUnits(fs *flag.FlagSet, args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			return nil // the flags end here
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if f == nil {
			return nil // fs reports it
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				return nil
			}
			i++
			value = args[i]
		}
		if err := Unitless(fs, name, value); err != nil {
			return err
		}
	}
	return nil
}
