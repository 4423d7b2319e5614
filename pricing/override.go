package pricing

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// Override returns the default table (Default) overridden and extended by
// section, the pricing section of a config file: a *yaml.Node or
// yaml.Node as decoded from the file, a map or any value that marshals to
// YAML of the shape of prices.yaml, or raw YAML or JSON ([]byte, string).
// A nil or empty section leaves the default table as it is. The prices of
// the models a release does not know yet, or that changed since, can so be
// given without a release.
func Override(section any) (*Table, error) {
	t := Default()
	if err := t.MergeValue(section); err != nil {
		return nil, err
	}
	return t, nil
}

// MergeValue merges section into t as Merge does, taking it in any of the
// forms Override accepts. On error t is left unchanged.
func (t *Table) MergeValue(section any) error {
	doc, err := sectionBytes(section)
	if err != nil || len(bytes.TrimSpace(doc)) == 0 {
		return err
	}
	return t.Merge(bytes.NewReader(doc))
}

// sectionBytes returns the YAML text of a pricing section.
func sectionBytes(section any) ([]byte, error) {
	switch v := section.(type) {
	case nil:
		return nil, nil
	case []byte:
		return v, nil
	case string:
		return []byte(v), nil
	case yaml.Node:
		return sectionBytes(&v)
	case *yaml.Node:
		if v == nil || v.Kind == 0 {
			return nil, nil
		}
	}
	b, err := yaml.Marshal(section)
	if err != nil {
		return nil, fmt.Errorf("pricing: %w", err)
	}
	return b, nil
}
