package pricing

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"

	"gopkg.in/yaml.v3"
)

// document is the shape of a price file: providers by name.
type document map[string]*providerDoc

// providerDoc is one provider's section of a price file.
type providerDoc struct {
	BatchMultiplier  *float64             `yaml:"batch-multiplier"`
	CacheMultipliers *multipliersDoc      `yaml:"cache-multipliers"`
	Models           map[string]*modelDoc `yaml:"models"`
	Aliases          map[string]string    `yaml:"aliases"`
}

// multipliersDoc holds the cache prices as multiples of the input price.
type multipliersDoc struct {
	Write5m *float64 `yaml:"write-5m"`
	Write1h *float64 `yaml:"write-1h"`
	Read    *float64 `yaml:"read"`
}

// modelDoc is one model's prices in USD per million tokens.
type modelDoc struct {
	Input           *float64        `yaml:"input"`
	Output          *float64        `yaml:"output"`
	CacheWrite5m    *float64        `yaml:"cache-write-5m"`
	CacheWrite1h    *float64        `yaml:"cache-write-1h"`
	CacheRead       *float64        `yaml:"cache-read"`
	BatchMultiplier *float64        `yaml:"batch-multiplier"`
	FlexMultiplier  *float64        `yaml:"flex-multiplier"`
	LongContext     *longContextDoc `yaml:"long-context"`
	// CacheMultipliers, when given, replace the provider's for this model
	// (field by field): Claude Opus 5.5 reads its cache at 0.05x input.
	CacheMultipliers *multipliersDoc `yaml:"cache-multipliers"`
}

// longContextDoc holds the prices of requests whose input exceeds Above
// tokens.
type longContextDoc struct {
	Above  *int64   `yaml:"above"`
	Input  *float64 `yaml:"input"`
	Output *float64 `yaml:"output"`
}

// decode reads a price document; an empty one is not an error.
func decode(r io.Reader) (document, error) {
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	var doc document
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return document{}, nil
		}
		return nil, fmt.Errorf("pricing: %w", err)
	}
	return doc, nil
}

// merge returns base overridden by over, field by field; neither is
// modified.
func merge(base, over document) document {
	out := make(document, len(base)+len(over))
	for name, p := range base {
		out[name] = p.clone()
	}
	for name, op := range over {
		if op == nil {
			continue
		}
		p := out[name]
		if p == nil {
			p = &providerDoc{}
			out[name] = p
		}
		set(&p.BatchMultiplier, op.BatchMultiplier)
		mergeMultipliers(&p.CacheMultipliers, op.CacheMultipliers)
		for id, om := range op.Models {
			if om == nil {
				continue
			}
			if p.Models == nil {
				p.Models = map[string]*modelDoc{}
			}
			m := p.Models[id]
			if m == nil {
				m = &modelDoc{}
				p.Models[id] = m
			}
			set(&m.Input, om.Input)
			set(&m.Output, om.Output)
			set(&m.CacheWrite5m, om.CacheWrite5m)
			set(&m.CacheWrite1h, om.CacheWrite1h)
			set(&m.CacheRead, om.CacheRead)
			set(&m.BatchMultiplier, om.BatchMultiplier)
			set(&m.FlexMultiplier, om.FlexMultiplier)
			mergeMultipliers(&m.CacheMultipliers, om.CacheMultipliers)
			if ol := om.LongContext; ol != nil {
				if m.LongContext == nil {
					m.LongContext = &longContextDoc{}
				}
				set(&m.LongContext.Above, ol.Above)
				set(&m.LongContext.Input, ol.Input)
				set(&m.LongContext.Output, ol.Output)
			}
		}
		for alias, target := range op.Aliases {
			if p.Aliases == nil {
				p.Aliases = map[string]string{}
			}
			p.Aliases[alias] = target
		}
	}
	return out
}

// mergeMultipliers overrides *dst field by field with over, if given.
func mergeMultipliers(dst **multipliersDoc, over *multipliersDoc) {
	if over == nil {
		return
	}
	if *dst == nil {
		*dst = &multipliersDoc{}
	}
	set(&(*dst).Write5m, over.Write5m)
	set(&(*dst).Write1h, over.Write1h)
	set(&(*dst).Read, over.Read)
}

// set overwrites *dst with src when src is given.
func set[T any](dst **T, src *T) {
	if src != nil {
		v := *src
		*dst = &v
	}
}

// clone returns a deep copy of p.
func (p *providerDoc) clone() *providerDoc {
	if p == nil {
		return nil
	}
	c := *p
	if p.CacheMultipliers != nil {
		m := *p.CacheMultipliers
		c.CacheMultipliers = &m
	}
	c.Models = make(map[string]*modelDoc, len(p.Models))
	for id, m := range p.Models {
		mc := *m
		if m.LongContext != nil {
			l := *m.LongContext
			mc.LongContext = &l
		}
		if m.CacheMultipliers != nil {
			cm := *m.CacheMultipliers
			mc.CacheMultipliers = &cm
		}
		c.Models[id] = &mc
	}
	c.Aliases = maps.Clone(p.Aliases)
	return &c
}

// checkPrice rejects negative, infinite and NaN prices or multipliers.
func checkPrice(where, field string, v *float64) error {
	if v == nil {
		return nil
	}
	if math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0 {
		return fmt.Errorf("pricing: %s: %s must be a number >= 0, not %v", where, field, *v)
	}
	if *v > 1e6 {
		return fmt.Errorf("pricing: %s: %s of %v is not a plausible price per million tokens", where, field, *v)
	}
	return nil
}
