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
