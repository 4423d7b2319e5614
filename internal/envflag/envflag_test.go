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
