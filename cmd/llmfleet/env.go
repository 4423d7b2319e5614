package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// EnvPrefix starts the name of the environment variable that sets a flag:
// LLMFLEET_ and the flag's name in upper case, dashes as underscores
// (--default-budget: LLMFLEET_DEFAULT_BUDGET).
const EnvPrefix = "LLMFLEET_"

// envName is the environment variable of the flag name.
func envName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags parses args into fs, then sets every flag not given on the
// command line from its environment variable (see envName), if set and
// not empty. A command line flag wins over the environment, which wins
// over a config file applied afterwards (it skips the flags set here).
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
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
		name := envName(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("environment variable %s (--%s): %v", name, f.Name, e)
		}
	})
	return err
}

// envUsage is the paragraph of a command's help on the environment.
const envUsage = `Every flag may also be set in the environment as LLMFLEET_<FLAG>, in upper
case with dashes as underscores (--default-budget: LLMFLEET_DEFAULT_BUDGET).
A flag on the command line wins over the environment, which wins over the
--config file, which wins over the default.
`

// childEnv is the environment of the processes the benchmarks start: the
// caller's, less its LLMFLEET_ settings, so that the children run with
// the flags the benchmark gives them and nothing else.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, EnvPrefix) {
			env = append(env, kv)
		}
	}
	return env
}
