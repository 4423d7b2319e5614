package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

func init() { commands["version"] = runVersion }

// buildVersion describes the running binary, from its build info: the
// module version ("devel" for a build from a work tree), and the VCS
// revision and time when the build recorded them.
type buildVersion struct {
	Version, Revision, Time string
	Modified                bool
}

// readVersion reads the build info of the running binary.
func readVersion() buildVersion {
	v := buildVersion{Version: "devel"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
		v.Version = mv
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the line "llmfleet version" prints.
func (v buildVersion) String() string {
	s := "llmfleet " + v.Version
	if v.Revision != "" {
		s += " " + v.Revision
		if v.Modified {
			s += "+dirty"
		}
	}
	if v.Time != "" {
		s += " " + v.Time
	}
	return s + " " + runtime.Version()
}

// runVersion prints the version of the binary.
func runVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected arguments: %v", args)
	}
	fmt.Fprintln(stdout, readVersion())
	return nil
}
