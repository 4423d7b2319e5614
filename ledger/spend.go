package ledger

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// DefaultSpendTTL is how long a Spend uses the sums it read from its
// store before it reads them again, when SpendConfig.TTL is 0.
const DefaultSpendTTL = 5 * time.Second

// SpendConfig is what a Spend is made of.
type SpendConfig struct {
	// Store is whence what the clients paid is read: the store every
	// process enforcing the limits shares, so that a limit holds across
	// them. Required.
	Store llmfleet.SpendStore
	// Limits are the clients' limits, by client.
	Limits map[string]ClientLimits
	// TTL is how long sums read are used before they are read again
	// (this process's own payments are added as they are booked); 0
	// means DefaultSpendTTL.
	TTL time.Duration
	// Clock tells the time (the UTC day and month); nil: the real clock.
	Clock llmfleet.Clock
	// Logger gets a warning when the store cannot be read; nil discards.
	Logger *slog.Logger
}

// Spend keeps what the clients with limits paid today and this month
// (UTC): sums read from the store (what every process sharing it wrote),
// kept for a TTL, plus what this process booked since (Paid). Its methods
// are safe for concurrent use.
type Spend struct {
	cfg   SpendConfig
	clock llmfleet.Clock
	log   *slog.Logger

	reading sync.Mutex // held by the one reading the store

	mu   sync.Mutex
	read time.Time // when the sums were read; zero: never
	// failed is when a read failed before any succeeded: until a TTL
	// later, calls go on without waiting for another.
	failed time.Time
	day    time.Time // the UTC day they are of
	today  map[string]float64
	month  map[string]float64
	since  map[spendDay]float64 // booked since the read in progress began
}

// spendDay is a client's spend of one UTC day.
type spendDay struct {
	client string
	day    time.Time
}

// NewSpend returns a Spend of cfg.
func NewSpend(cfg SpendConfig) *Spend {
	s := &Spend{cfg: cfg, clock: cfg.Clock, log: cfg.Logger}
	if s.clock == nil {
		s.clock = llmfleet.RealClock{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.cfg.TTL <= 0 {
		s.cfg.TTL = DefaultSpendTTL
	}
	return s
}

// Paid adds what a priced entry cost to its client's sums, if the
// client has limits: what this process paid counts at once, before the
// store is read again.
func (s *Spend) Paid(e llmfleet.LedgerEntry) {
	if e.CostUSD == 0 || !s.cfg.Limits[e.Client].limited() {
		return
	}
	day := llmfleet.UTCDay(e.Time)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.since != nil {
		s.since[spendDay{e.Client, day}] += e.CostUSD
	}
	if s.read.IsZero() {
		return
	}
	if day.Equal(s.day) {
		s.today[e.Client] += e.CostUSD
	}
	if llmfleet.UTCMonth(day).Equal(llmfleet.UTCMonth(s.day)) && !day.After(s.day) {
		s.month[e.Client] += e.CostUSD
	}
}

// Check returns what the limits of client say of its next call. A
// client without limits gets the zero Verdict.
func (s *Spend) Check(ctx context.Context, client string) Verdict {
	l, ok := s.cfg.Limits[client]
	if !ok {
		return Verdict{}
	}
	if !l.limited() {
		return Verdict{ZDR: l.ZDR}
	}
	now := s.clock.Now()
	today, month := s.sums(ctx, now, client)
	return l.verdict(now, today, month)
}

// sums returns what client paid today and this month, reading the store
// if the sums kept are older than the TTL or of another day.
func (s *Spend) sums(ctx context.Context, now time.Time, client string) (today, month float64) {
	day := llmfleet.UTCDay(now)
	s.mu.Lock()
	have := !s.read.IsZero() && s.day.Equal(day)
	fresh := have && now.Sub(s.read) < s.cfg.TTL
	today, month = s.today[client], s.month[client]
	failing := s.read.IsZero() && !s.failed.IsZero() && now.Sub(s.failed) < s.cfg.TTL
	s.mu.Unlock()
	if fresh || failing {
		return today, month
	}
	if have {
		if !s.reading.TryLock() {
			return today, month // another caller reads; these are recent enough
		}
	} else {
		s.reading.Lock()
	}
	defer s.reading.Unlock()
	s.refresh(ctx, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.today[client], s.month[client]
}

// refresh reads the sums of now's day and month from the store; on an
// error it keeps those it has (none: the limits are not enforced until a
// read succeeds, rather than every call refused while the store is down).
func (s *Spend) refresh(ctx context.Context, now time.Time) {
	day := llmfleet.UTCDay(now)
	s.mu.Lock()
	if !s.read.IsZero() && s.day.Equal(day) && now.Sub(s.read) < s.cfg.TTL {
		s.mu.Unlock()
		return // read meanwhile
	}
	s.since = map[spendDay]float64{}
	s.mu.Unlock()
	rows, err := s.cfg.Store.ClientSpend(ctx, llmfleet.UTCMonth(now), day.AddDate(0, 0, 1))
	s.mu.Lock()
	defer s.mu.Unlock()
	since := s.since
	s.since = nil
	if err != nil {
		s.log.Warn("client spend not read; limits use what was read before", "err", err)
		if s.read.IsZero() {
			s.failed = now
		}
		return
	}
	today, month := map[string]float64{}, map[string]float64{}
	add := func(client string, d time.Time, usd float64) {
		if d.After(day) || d.Before(llmfleet.UTCMonth(now)) {
			return
		}
		month[client] += usd
		if d.Equal(day) {
			today[client] += usd
		}
	}
	for _, r := range rows {
		add(r.Client, r.Day, r.USD)
	}
	for k, usd := range since {
		add(k.client, k.day, usd)
	}
	s.read, s.day, s.today, s.month = now, day, today, month
}

// ClientStatus is a client's spend against its limits, as the stats
// show it.
type ClientStatus struct {
	Client string `json:"client"`
	// TodayUSD and MonthUSD are what it paid this UTC day and month.
	TodayUSD float64 `json:"today_usd"`
	MonthUSD float64 `json:"month_usd"`
	// DailyUSD and MonthlyUSD are its limits (0: none).
	DailyUSD   float64 `json:"daily_usd"`
	MonthlyUSD float64 `json:"monthly_usd"`
	// OverLimit is what becomes of its calls over a limit.
	OverLimit OverLimit `json:"over_limit"`
	// ZDR: its calls are never batched.
	ZDR bool `json:"zdr"`
	// Limit names the limit it has reached ("" none), ResetsAt when that
	// limit's period ends.
	Limit    string    `json:"limit_reached,omitempty"`
	ResetsAt time.Time `json:"resets_at,omitzero"`
}

// Clients returns every client with limits, by name, with what it paid
// today and this month.
func (s *Spend) Clients(ctx context.Context) []ClientStatus {
	names := make([]string, 0, len(s.cfg.Limits))
	for name := range s.cfg.Limits {
		names = append(names, name)
	}
	slices.Sort(names)
	now := s.clock.Now()
	out := make([]ClientStatus, 0, len(names))
	for _, name := range names {
		l := s.cfg.Limits[name]
		today, month := s.sums(ctx, now, name)
		v := l.verdict(now, today, month)
		over := l.OverLimit
		if over == "" {
			over = OverReject
		}
		out = append(out, ClientStatus{Client: name, TodayUSD: RoundUSD(today), MonthUSD: RoundUSD(month), DailyUSD: l.DailyUSD,
			MonthlyUSD: l.MonthlyUSD, OverLimit: over, ZDR: l.ZDR, Limit: v.Limit, ResetsAt: v.Resets})
	}
	return out
}
