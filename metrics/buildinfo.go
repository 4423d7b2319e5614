package metrics

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// buildInfo is llmfleet_build_info: a gauge of 1 labelled with the
// module version of the binary ("devel" for a build from a work tree),
// its VCS revision (empty if the build recorded none) and the Go version.
func buildInfo() prometheus.Collector {
	version, revision := "devel", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "llmfleet_build_info",
		Help:        "Always 1, labelled with the version and VCS revision of the binary and the Go version it was built with.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}
