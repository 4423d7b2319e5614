// Package envflag sets the flags of llmfleet's commands from the
// environment: every flag --some-name may be given as LLMFLEET_SOME_NAME,
// and a flag given on the command line wins.
package envflag

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// Prefix starts the name of the environment variable that sets a flag:
// LLMFLEET_ and the flag's name in upper case, dashes as underscores
// (--default-budget: LLMFLEET_DEFAULT_BUDGET).
const Prefix = "LLMFLEET_"

// Name is the environment variable of the flag flagName.
func Name(flagName string) string {
	return Prefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse parses args into fs, then sets every flag not given on the
// command line from its environment variable (see Name), if set and not
// empty. A duration given without a unit is an error saying it needs
// one (Unitless). A command line flag wins over the environment, which wins over a
// config file applied afterwards (it skips the flags set here).
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := checkUnits(fs, args); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	return setFromEnv(fs, getenv)
}

// setFromEnv sets the flags of fs not set yet from the environment. An
// invalid value is an error naming the variable.
func setFromEnv(fs *flag.FlagSet, getenv func(string) string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] {
			return
		}
		name := Name(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if e := Unitless(fs, f.Name, v); e != nil {
			err = fmt.Errorf("environment variable %s: %v", name, e)
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("environment variable %s (--%s): %v", name, f.Name, e)
		}
	})
	return err
}

// Usage is the paragraph of a command's help on the environment.
const Usage = `Every flag may also be set in the environment as LLMFLEET_<FLAG>, in upper
case with dashes as underscores (--default-budget: LLMFLEET_DEFAULT_BUDGET).
A flag on the command line wins over the environment, which wins over the
--config file, which wins over the default.
`

// ChildEnv is the environment of the processes a command starts: this
// process's, less its LLMFLEET_ settings, so that the children run with
// the flags they are given and nothing else.
func ChildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, Prefix) {
			env = append(env, kv)
		}
	}
	return env
}
