package pricing

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/llmfleet/llmfleet"
)

//go:embed prices.yaml
var embedded []byte

// DefaultProvider is the provider assumed when an empty one is asked for.
const DefaultProvider = "anthropic"

// Table is a price table. Its zero value prices nothing. It is safe for
// concurrent use; Merge replaces its contents atomically.
type Table struct {
	mu        sync.RWMutex
	doc       document
	providers map[string]*provider
}

// provider is one provider's resolved prices.
type provider struct {
	models  map[string]Price
	aliases map[string]string
	canon   map[string]string // model id -> the name its figures go under
}

// Default returns a new table holding the prices embedded in the binary.
func Default() *Table {
	t, err := Parse(bytes.NewReader(embedded))
	if err == nil {
		err = mergeGemini(t)
	}
	if err != nil {
		panic("pricing: embedded price table: " + err.Error())
	}
	return t
}

// Parse returns a new table holding the prices of a YAML or JSON document
// (see prices.yaml for its shape).
func Parse(r io.Reader) (*Table, error) {
	t := &Table{}
	if err := t.Merge(r); err != nil {
		return nil, err
	}
	return t, nil
}

// Merge overrides and extends t with a YAML or JSON document of the shape
// of prices.yaml: a field it gives replaces the table's, a model or
// provider it names that the table lacks is added. A cache price left out
// follows the model's input price through the provider's multipliers. On
// error t is left unchanged.
func (t *Table) Merge(r io.Reader) error {
	over, err := decode(r)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	doc := merge(t.doc, over)
	providers, err := resolve(doc)
	if err != nil {
		return err
	}
	t.doc, t.providers = doc, providers
	return nil
}

// Lookup returns the prices of a model: by its exact id, then as an alias,
// then, without a trailing snapshot date (claude-haiku-4-5-20251001 is
// priced as claude-haiku-4-5), the same way. An empty provider means
// DefaultProvider.
func (t *Table) Lookup(providerName, model string) (Price, bool) {
	p := t.provider(providerName)
	if p == nil {
		return Price{}, false
	}
	id, ok := p.entry(model)
	if !ok {
		return Price{}, false
	}
	return p.models[id], true
}

// provider returns a provider's resolved prices, nil when the table has
// none. An empty name means DefaultProvider.
func (t *Table) provider(name string) *provider {
	if t == nil {
		return nil
	}
	if name == "" {
		name = DefaultProvider
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.providers[name]
}

// Cost returns the cost in USD of usage u of a model at route. priced is
// false, and usd 0, when the table does not know the model; callers must
// then count the tokens and flag the request rather than take it as free.
// Its signature fits the ledger's price hook.
func (t *Table) Cost(providerName, model string, u llmfleet.Usage, route llmfleet.Route) (usd float64, priced bool) {
	p, ok := t.Lookup(providerName, model)
	if !ok {
		return 0, false
	}
	return p.Cost(u, route), true
}

// TierCost returns the cost in USD of usage u of a model served in tier,
// as Cost does for a route.
func (t *Table) TierCost(providerName, model string, u llmfleet.Usage, tier llmfleet.Tier) (usd float64, priced bool) {
	p, ok := t.Lookup(providerName, model)
	if !ok {
		return 0, false
	}
	return p.TierCost(u, tier), true
}

// Flex reports whether the table gives a model of a provider a flex tier
// (a flex-multiplier): the models the engine may route flex.
func (t *Table) Flex(providerName, model string) bool {
	p, ok := t.Lookup(providerName, model)
	return ok && p.HasFlex()
}

// Models returns the model ids a provider prices, sorted (aliases not
// included).
func (t *Table) Models(providerName string) []string {
	if t == nil {
		return nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	p := t.providers[providerName]
	if p == nil {
		return nil
	}
	ids := make([]string, 0, len(p.models))
	for id := range p.models {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// resolve validates a document and computes every model's prices.
func resolve(doc document) (map[string]*provider, error) {
	out := make(map[string]*provider, len(doc))
	for name, pd := range doc {
		if name == "" {
			return nil, fmt.Errorf("pricing: empty provider name")
		}
		if pd == nil {
			continue
		}
		if err := checkPrice(name, "batch-multiplier", pd.BatchMultiplier); err != nil {
			return nil, err
		}
		batch := 1.0
		if pd.BatchMultiplier != nil {
			batch = *pd.BatchMultiplier
		}
		mult := multipliersDoc{Write5m: ptr(1.0), Write1h: ptr(1.0), Read: ptr(1.0)}
		if err := overrideMultipliers(&mult, name, pd.CacheMultipliers); err != nil {
			return nil, err
		}
		p := &provider{models: make(map[string]Price, len(pd.Models)), aliases: make(map[string]string, len(pd.Aliases))}
		for id, md := range pd.Models {
			pr, err := resolveModel(name+" model "+id, md, mult, batch)
			if err != nil {
				return nil, err
			}
			p.models[id] = pr
		}
		for alias, id := range pd.Aliases {
			if _, ok := p.models[id]; !ok {
				return nil, fmt.Errorf("pricing: %s alias %s: no model %q", name, alias, id)
			}
			p.aliases[alias] = id
		}
		p.canon = p.canonicalNames()
		out[name] = p
	}
	return out, nil
}

// resolveModel computes one model's prices.
func resolveModel(where string, md *modelDoc, mult multipliersDoc, batch float64) (Price, error) {
	if md == nil || md.Input == nil || md.Output == nil {
		return Price{}, fmt.Errorf("pricing: %s: input and output prices are required", where)
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"input", md.Input}, {"output", md.Output}, {"cache-write-5m", md.CacheWrite5m},
		{"cache-write-1h", md.CacheWrite1h}, {"cache-read", md.CacheRead}, {"batch-multiplier", md.BatchMultiplier},
		{"flex-multiplier", md.FlexMultiplier}} {
		if err := checkPrice(where, f.name, f.v); err != nil {
			return Price{}, err
		}
	}
	if md.BatchMultiplier != nil {
		batch = *md.BatchMultiplier
	}
	if err := overrideMultipliers(&mult, where, md.CacheMultipliers); err != nil {
		return Price{}, err
	}
	pr := Price{
		Input:        *md.Input,
		Output:       *md.Output,
		CacheWrite5m: or(md.CacheWrite5m, derive(*md.Input, *mult.Write5m)),
		CacheWrite1h: or(md.CacheWrite1h, derive(*md.Input, *mult.Write1h)),
		CacheRead:    or(md.CacheRead, derive(*md.Input, *mult.Read)),
		Batch:        batch,
		Flex:         or(md.FlexMultiplier, 0),
	}
	if l := md.LongContext; l != nil {
		if l.Above == nil || *l.Above <= 0 || l.Input == nil || l.Output == nil {
			return Price{}, fmt.Errorf("pricing: %s: long-context needs above (> 0), input and output", where)
		}
		if err := checkPrice(where, "long-context input", l.Input); err != nil {
			return Price{}, err
		}
		if err := checkPrice(where, "long-context output", l.Output); err != nil {
			return Price{}, err
		}
		pr.LongContextAbove = *l.Above
		pr.LongContext = &Price{
			Input:        *l.Input,
			Output:       *l.Output,
			CacheWrite5m: derive(*l.Input, *mult.Write5m),
			CacheWrite1h: derive(*l.Input, *mult.Write1h),
			CacheRead:    derive(*l.Input, *mult.Read),
			Batch:        batch,
			Flex:         pr.Flex,
		}
	}
	return pr, nil
}

// overrideMultipliers replaces the fields of *mult that m gives, after
// checking them.
func overrideMultipliers(mult *multipliersDoc, where string, m *multipliersDoc) error {
	if m == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		v    *float64
		dst  **float64
	}{{"write-5m", m.Write5m, &mult.Write5m}, {"write-1h", m.Write1h, &mult.Write1h}, {"read", m.Read, &mult.Read}} {
		if err := checkPrice(where, "cache-multipliers "+f.name, f.v); err != nil {
			return err
		}
		set(f.dst, f.v)
	}
	return nil
}

// derive returns input times a multiplier, rounded to the micro-dollar per
// million tokens so that 3 × 1.25 is exactly 3.75.
func derive(input, mult float64) float64 {
	return float64(perToken(input, mult)) / 1e6
}

func or(v *float64, def float64) float64 {
	if v != nil {
		return *v
	}
	return def
}

func ptr[T any](v T) *T { return &v }
