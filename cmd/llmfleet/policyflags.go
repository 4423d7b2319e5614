package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/dispatch"
)

// policyFlags are the dispatcher's policy flags, shared by serve and
// simulate so that a simulated policy is set exactly as a served one.
type policyFlags struct {
	syncMax, window, poll, maxPoll, prior, createTimeout, defBudget *time.Duration
	syncPrior, rescueMargin, settle                                 *time.Duration
	minSize, maxSize                                                *int
	ttlUpgrade                                                      *onOff
	batchRate                                                       *float64
	trials                                                          *int
}

func addPolicyFlags(fs *flag.FlagSet) *policyFlags {
	return &policyFlags{
		syncMax:       fs.Duration("sync-max-latency", 0, "largest budget that always goes sync (0: dispatcher default, 5s)"),
		window:        fs.Duration("batch-window", 0, "longest a request waits in a pool (0: dispatcher default, 30s)"),
		minSize:       fs.Int("batch-min-size", 0, "pool size at which a batch goes out at once (0: dispatcher default, 10)"),
		maxSize:       fs.Int("batch-max-size", 0, "most requests in one batch (0: dispatcher default, 100)"),
		poll:          fs.Duration("poll-interval", 0, "shortest interval between polls of a credential's batches (0: dispatcher default, 5s)"),
		maxPoll:       fs.Duration("max-poll-interval", 0, "longest interval between polls while a batch is in flight (0: dispatcher default, 30s)"),
		prior:         fs.Duration("turnaround-prior", 0, "predicted batch turnaround before any is observed (0: dispatcher default, 2m)"),
		createTimeout: fs.Duration("create-timeout", 0, "bound of one batch create call; an unanswered create (lost connection, crash) is sent again only if a list read after this bound plus a 2s settle delay lacks its batch (0: dispatcher default, 2m)"),
		defBudget:     fs.Duration("default-budget", 0, "budget of a request that carries none (0: sync)"),
		syncPrior:     fs.Duration("sync-latency-prior", 0, "predicted sync latency before any is observed (0: dispatcher default, 30s)"),
		rescueMargin:  fs.Duration("rescue-margin", 0, "margin kept before a batched request's deadline when it is rescued (0: dispatcher default, 2s)"),
		settle:        fs.Duration("settle-delay", 0, "how long after a create the provider's batch list is trusted to show the batch (0: dispatcher default, 2s)"),
		batchRate:     fs.Float64("cache-batch-rate-prior", 0, "the batch cache's hit rate the cost model assumes until it measures it: the share of batch items that read what batch items wrote (the vendor says 30% to 98%); set it to what your own usage shows (0: 0.5)"),
		trials:        fs.Int("cache-trials", 0, "turns per model and key the router may batch to measure the batch cache's rate, each expected to cost at most 30% more than the route it replaces (0: none)"),
		ttlUpgrade:    onOffFlag(fs, "cache-ttl-upgrade", true, "raise the cache_control TTLs of a batched request to 1h where the cost model finds it cheaper over the turn and the turns to come (its 5-minute entries would lapse before the next turn reads them) (each rewrite is named in its ledger entry): on or off"),
	}
}

// onOff is a flag that is on or off.
type onOff struct{ on bool }

func (o *onOff) String() string {
	if o == nil || o.on {
		return "on"
	}
	return "off"
}

func (o *onOff) Set(v string) error {
	switch strings.ToLower(v) {
	case "on", "true", "1":
		o.on = true
	case "off", "false", "0":
		o.on = false
	default:
		return fmt.Errorf("want on or off, not %q", v)
	}
	return nil
}

// IsBoolFlag lets the flag be given alone (--cache-ttl-upgrade: on).
func (o *onOff) IsBoolFlag() bool { return true }

// onOffFlag defines an on/off flag.
func onOffFlag(fs *flag.FlagSet, name string, def bool, usage string) *onOff {
	o := &onOff{on: def}
	fs.Var(o, name, usage)
	return o
}

// policy is the policy the flags set.
func (f *policyFlags) policy() dispatch.Policy {
	return dispatch.Policy{
		DefaultBudget:    *f.defBudget,
		SyncMaxLatency:   *f.syncMax,
		BatchWindow:      *f.window,
		BatchMinSize:     *f.minSize,
		BatchMaxSize:     *f.maxSize,
		PollInterval:     *f.poll,
		MaxPollInterval:  *f.maxPoll,
		TurnaroundPrior:  *f.prior,
		CreateTimeout:    *f.createTimeout,
		SyncLatencyPrior: *f.syncPrior,
		RescueMargin:     *f.rescueMargin,
		SettleDelay:      *f.settle,
		NoTTLUpgrade:     !f.ttlUpgrade.on,
		CacheBatchRate:   *f.batchRate,
		CacheTrials:      *f.trials,
	}
}
