package main

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/simulate"
)

// scaleDuration divides d by scale, to the millisecond at least 1ms when
// d is positive.
func scaleDuration(d time.Duration, scale float64) time.Duration {
	if d <= 0 {
		return d
	}
	s := time.Duration(float64(d) / scale)
	return max(s.Round(time.Millisecond), time.Millisecond)
}

// scaleMS divides a millisecond count by scale, keeping a positive one
// at least 1.
func scaleMS(v int64, scale float64) int64 {
	if v <= 0 {
		return v
	}
	return max(int64(math.Round(float64(v)/scale)), 1)
}

// scaleTurns returns turns with their times and budgets divided by scale.
func scaleTurns(turns []simulate.Turn, scale float64) []simulate.Turn {
	out := make([]simulate.Turn, len(turns))
	for i, t := range turns {
		t.AtMS, t.ThinkMS, t.BudgetMS = scaleMS(t.AtMS, scale), scaleMS(t.ThinkMS, scale), scaleMS(t.BudgetMS, scale)
		out[i] = t
	}
	return out
}

// scalePolicy returns p (with its defaults set) with its durations
// divided by scale.
func scalePolicy(p dispatch.Policy, scale float64) dispatch.Policy {
	p = p.WithDefaults()
	for _, d := range []*time.Duration{&p.DefaultBudget, &p.SyncMaxLatency, &p.BatchWindow, &p.PollInterval, &p.MaxPollInterval,
		&p.TurnaroundPrior, &p.CreateTimeout, &p.SyncLatencyPrior, &p.RescueMargin, &p.SettleDelay} {
		*d = scaleDuration(*d, scale)
	}
	if p.TurnaroundPriors != nil {
		m := make(map[string]time.Duration, len(p.TurnaroundPriors))
		for k, v := range p.TurnaroundPriors {
			m[k] = scaleDuration(v, scale)
		}
		p.TurnaroundPriors = m
	}
	return p
}

// scaleRangeSpec divides each duration of a per-model range flag
// ("2m-10m,claude-opus-4-6=5m-20m") by scale.
func scaleRangeSpec(spec string, scale float64) (string, error) {
	if _, err := emulator.ParseRanges("-turnaround", spec); err != nil {
		return "", err
	}
	var parts []string
	for _, part := range strings.Split(spec, ",") {
		model, rng, isPair := strings.Cut(part, "=")
		if !isPair {
			rng = part
		}
		var ds []string
		for _, s := range strings.Split(rng, "-") {
			d, err := time.ParseDuration(strings.TrimSpace(s))
			if err != nil {
				return "", err
			}
			ds = append(ds, scaleDuration(d, scale).String())
		}
		r := strings.Join(ds, "-")
		if isPair {
			r = strings.TrimSpace(model) + "=" + r
		}
		parts = append(parts, r)
	}
	return strings.Join(parts, ","), nil
}

// policyArgs are serve's flags for p.
func policyArgs(p dispatch.Policy) []string {
	return []string{
		"--sync-max-latency", p.SyncMaxLatency.String(), "--batch-window", p.BatchWindow.String(),
		"--batch-min-size", strconv.Itoa(p.BatchMinSize), "--batch-max-size", strconv.Itoa(p.BatchMaxSize),
		"--poll-interval", p.PollInterval.String(), "--max-poll-interval", p.MaxPollInterval.String(),
		"--turnaround-prior", p.TurnaroundPrior.String(), "--create-timeout", p.CreateTimeout.String(),
		"--sync-latency-prior", p.SyncLatencyPrior.String(), "--rescue-margin", p.RescueMargin.String(),
		"--settle-delay", p.SettleDelay.String(),
	}
}
