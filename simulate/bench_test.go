package simulate

import (
	"testing"
	"time"
)

// BenchmarkSimulate runs a fleet of 10,000 agents of 10 dependent turns
// (100,000 requests) per iteration under the default policy, and reports
// requests simulated per second of wall time.
func BenchmarkSimulate(b *testing.B) {
	turns := Fleet(10000, 10, 1)
	cfg := Config{Name: "llmfleet", Seed: 1, Straggler: Straggler{Fraction: 0.05, Factor: 10}}
	b.ResetTimer()
	start := time.Now()
	n := 0
	for b.Loop() {
		r, err := Run(cfg, turns)
		if err != nil {
			b.Fatal(err)
		}
		n += r.Requests
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "requests/s")
}
