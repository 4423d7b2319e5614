package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

func init() { commands["version"] = runVersion }

// version is the release version, set at link time by scripts/release.sh
// and scripts/image.sh (-ldflags "-X main.version=v1.2.3", from git
// describe). Empty otherwise: the build info's module version is used.
var version string

// buildVersion describes the running binary, from its build info: the
// module version ("devel" for a build from a work tree), and the VCS
// revision and time when the build recorded them.
type buildVersion struct {
	Version, Revision, Time string
	Modified                bool
}

// readVersion reads the build info of the running binary; the version
// set at link time, if any, wins over the module version.
func readVersion() buildVersion {
	v := buildVersion{Version: "devel"}
	bi, ok := debug.ReadBuildInfo()
	if version != "" {
		v.Version = version
	}
	if !ok {
		return v
	}
	if mv := bi.Main.Version; version == "" && mv != "" && mv != "(devel)" {
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
