package pricing

import "maps"

// Canonical returns the one name under which per-model figures of a model
// should be kept, so that the names of one priced model count as one: an
// alias and its dated id (claude-haiku-4-5 and claude-haiku-4-5-20251001,
// as real answers name it), and a dated snapshot the table prices by its
// undated id (gpt-4o-2024-08-06, claude-sonnet-4-6-20260217) all map to the
// undated name. A dated id the table prices apart (gpt-4o-2024-05-13) keeps
// its name, and so does a model the table does not know. An empty provider
// means DefaultProvider.
func (t *Table) Canonical(providerName, model string) string {
	p := t.provider(providerName)
	if p == nil {
		return model
	}
	id, ok := p.entry(model)
	if !ok {
		return model
	}
	return p.canon[id]
}

// Aliases returns a copy of a provider's aliases: alias to model id
// (claude-haiku-4-5 to claude-haiku-4-5-20251001). An empty provider
// means DefaultProvider.
func (t *Table) Aliases(providerName string) map[string]string {
	p := t.provider(providerName)
	if p == nil {
		return nil
	}
	return maps.Clone(p.aliases)
}

// entry returns the id of the model entry that prices model: model
// itself, the target of an alias, or either of model without its
// snapshot date.
func (p *provider) entry(model string) (string, bool) {
	if id, ok := p.exact(model); ok {
		return id, true
	}
	if short, ok := withoutDate(model); ok {
		return p.exact(short)
	}
	return "", false
}

// exact returns the model entry named by an id or an alias.
func (p *provider) exact(name string) (string, bool) {
	if _, ok := p.models[name]; ok {
		return name, true
	}
	id, ok := p.aliases[name]
	return id, ok
}

// canonicalNames returns, for each model id, the name its figures go
// under: the id without its snapshot date when that name (an alias, say)
// leads to the same entry, else the id.
func (p *provider) canonicalNames() map[string]string {
	out := make(map[string]string, len(p.models))
	for id := range p.models {
		out[id] = id
		if short, ok := withoutDate(id); ok {
			if target, ok := p.exact(short); ok && target == id {
				out[id] = short
			}
		}
	}
	return out
}
