package envflag

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	if got := Name("default-budget"); got != "LLMFLEET_DEFAULT_BUDGET" {
		t.Errorf("Name = %q", got)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	a := fs.String("a-b", "def", "")
	c := fs.Int("c", 1, "")
	env := map[string]string{"LLMFLEET_A_B": "from-env", "LLMFLEET_C": "7"}
	if err := Parse(fs, []string{"-c", "3"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if *a != "from-env" || *c != 3 {
		t.Errorf("a-b %q, c %d: the environment sets a-b, the command line wins for c", *a, *c)
	}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int("c", 1, "")
	err := Parse(fs, nil, func(k string) string { return map[string]string{"LLMFLEET_C": "x"}[k] })
	if err == nil || !strings.Contains(err.Error(), "environment variable LLMFLEET_C (--c)") {
		t.Errorf("a bad value: %v", err)
	}
}

func TestChildEnv(t *testing.T) {
	t.Setenv("LLMFLEET_SOMETHING", "1")
	t.Setenv("OTHER_THING", "1")
	env := strings.Join(ChildEnv(), "\n")
	if strings.Contains(env, "LLMFLEET_SOMETHING") || !strings.Contains(env, "OTHER_THING=1") {
		t.Errorf("ChildEnv kept LLMFLEET_ or dropped another: %q", env)
	}
}

// A duration flag given a number without a unit, on the command line, in
// the environment or in a config file (Unitless), says that durations
// need one.
func TestDurationNeedsAUnit(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Duration("default-budget", 0, "")
		fs.Bool("v", false, "")
		fs.Int("n", 0, "")
		return fs
	}
	none := func(string) string { return "" }
	for _, args := range [][]string{{"--default-budget", "10"}, {"-v", "--default-budget=10"}, {"--n", "3", "-default-budget", "10"}} {
		err := Parse(newFS(), args, none)
		if err == nil || !strings.Contains(err.Error(), `--default-budget: a duration needs a unit, e.g. "10s"`) {
			t.Errorf("%v: %v", args, err)
		}
	}
	err := Parse(newFS(), nil, func(k string) string { return map[string]string{"LLMFLEET_DEFAULT_BUDGET": "10"}[k] })
	if err == nil || !strings.Contains(err.Error(), "LLMFLEET_DEFAULT_BUDGET") || !strings.Contains(err.Error(), `"10s"`) {
		t.Errorf("from the environment: %v", err)
	}
	for _, args := range [][]string{{"--default-budget", "10s"}, {"--default-budget", "0"}, {"--n", "10"}, {"arg", "--default-budget", "10"}} {
		if err := Parse(newFS(), args, none); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	if err := Parse(newFS(), []string{"--default-budget", "soon"}, none); err == nil || strings.Contains(err.Error(), "unit") {
		t.Errorf("not a number: %v", err)
	}
}
