package jsonmember

// Objects calls object with every object in v, a valid JSON text
// (json.Valid; Objects does not check it), at any depth, each before the
// objects it holds, while object returns true, and reports whether every
// call did. An object inside an array counts as one inside an object.
func Objects(v []byte, object func(obj []byte) bool) bool {
	i := skipSpace(v, 0)
	if i >= len(v) {
		return true
	}
	switch v[i] {
	case '{':
		if !object(v[i:]) {
			return false
		}
		return walk(v[i:], func(_, _, vs, ve int) bool { return Objects(v[i+vs:i+ve], object) })
	case '[':
		i = skipSpace(v, i+1)
		if v[i] == ']' {
			return true
		}
		for {
			e := skipValue(v, i)
			if !Objects(v[i:e], object) {
				return false
			}
			i = skipSpace(v, e) // at ',' or ']'
			if v[i] == ']' {
				return true
			}
			i = skipSpace(v, i+1)
		}
	}
	return true
}

// ObjectsPruned is Objects, every object visited, but object returns for
// each the keys (raw, as in the text) of the members whose values are not
// looked into; nil: all are.
func ObjectsPruned(v []byte, object func(obj []byte) (skip func(key []byte) bool)) {
	i := skipSpace(v, 0)
	if i >= len(v) {
		return
	}
	switch v[i] {
	case '{':
		skip := object(v[i:])
		walk(v[i:], func(ks, ke, vs, ve int) bool {
			if skip == nil || !skip(v[i+ks+1:i+ke-1]) {
				ObjectsPruned(v[i+vs:i+ve], object)
			}
			return true
		})
	case '[':
		i = skipSpace(v, i+1)
		if v[i] == ']' {
			return
		}
		for {
			e := skipValue(v, i)
			ObjectsPruned(v[i:e], object)
			i = skipSpace(v, e) // at ',' or ']'
			if v[i] == ']' {
				return
			}
			i = skipSpace(v, i+1)
		}
	}
}
