package jsonmember

import (
	"bytes"
	"encoding/json"
)

// Delete returns obj, a JSON object, without its members named key. Each
// member is removed with the separator that followed it, or, for the last
// one kept, with the separator before it; every other byte is kept. obj
// itself is returned when it has no such member; otherwise the result is
// a new slice. Anything but a valid JSON object gives ErrNotObject.
func Delete(obj []byte, key string) ([]byte, error) {
	ms, err := Members(obj)
	if err != nil {
		return nil, err
	}
	if _, ok := Find(ms, key); !ok {
		return obj, nil
	}
	out := make([]byte, 0, len(obj))
	out = append(out, obj[:ms[0].Start]...) // '{' and the space after it
	prev := -1                              // the last member kept
	for i, m := range ms {
		if m.Key == key {
			continue
		}
		if prev >= 0 {
			// The separator that followed the previous member kept.
			out = append(out, obj[ms[prev].End:ms[prev+1].Start]...)
		}
		out = append(out, m.Text(obj)...)
		prev = i
	}
	return append(out, obj[ms[len(ms)-1].End:]...), nil // space and '}'
}

// Edit is the replacement of the value of the members named Key by Value,
// which must be a valid JSON value.
type Edit struct {
	Key   string
	Value []byte
}

// Replace returns a copy of obj in which the value of each member named
// in edits is replaced; for a key named twice, the first edit wins.
// Members that obj lacks stay absent, and every other byte of obj is kept.
// ms must be Members(obj).
func Replace(obj []byte, ms []Member, edits ...Edit) []byte {
	out := make([]byte, 0, len(obj))
	last := 0
	for _, m := range ms {
		for _, e := range edits {
			if e.Key == m.Key {
				out = append(out, obj[last:m.ValueStart]...)
				out = append(out, e.Value...)
				last = m.End
				break
			}
		}
	}
	return append(out, obj[last:]...)
}

// Set returns obj, a JSON object, with its member key set to value, a
// valid JSON value: the value of each member named key is replaced (as
// Replace does), or, when obj has none, the member is added after its
// last one. Every other byte is kept, and the result is a new slice.
// Anything but a valid JSON object gives ErrNotObject.
func Set(obj []byte, key string, value []byte) ([]byte, error) {
	ms, err := Members(obj)
	if err != nil {
		return nil, err
	}
	if _, ok := Find(ms, key); ok {
		return Replace(obj, ms, Edit{Key: key, Value: value}), nil
	}
	end := bytes.LastIndexByte(obj, '}') // Members checked it is there
	k, _ := json.Marshal(key)
	out := make([]byte, 0, len(obj)+len(k)+len(value)+2)
	out = append(out, obj[:end]...)
	if len(ms) > 0 {
		out = append(out, ',')
	}
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, value...)
	return append(out, obj[end:]...), nil
}
