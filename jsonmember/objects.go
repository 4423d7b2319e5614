package jsonmember

// Objects calls object with every object in v, a valid JSON text
// (json.Valid; Objects does not check it), at any depth, each before the
// objects it holds, while object returns true, and reports whether every
// call did. An object inside an array counts as one inside an object.
func Objects(v []byte, object func(obj []byte) bool) bool {
	return objects(v, nil, object)
}

// ObjectsBut is Objects, but it does not look into the value of a member
// whose raw key skip reports.
func ObjectsBut(v []byte, skip func(key []byte) bool, object func(obj []byte) bool) bool {
	return objects(v, skip, object)
}

func objects(v []byte, skip func(key []byte) bool, object func(obj []byte) bool) bool {
	i := skipSpace(v, 0)
	if i >= len(v) {
		return true
	}
	switch v[i] {
	case '{':
		if !object(v[i:]) {
			return false
		}
		return walk(v[i:], func(ks, ke, vs, ve int) bool {
			if skip != nil && skip(v[i+ks+1:i+ke-1]) {
				return true
			}
			return objects(v[i+vs:i+ve], skip, object)
		})
	case '[':
		i = skipSpace(v, i+1)
		if v[i] == ']' {
			return true
		}
		for {
			e := skipValue(v, i)
			if !objects(v[i:e], skip, object) {
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

// Walk calls member with the raw key and raw value of every member of the
// objects in v, a valid JSON text (json.Valid; Walk does not check it), at
// any depth, in order, descending into a member's value only where member
// returns true. An array's elements are walked as they come.
func Walk(v []byte, member func(key, value []byte) (descend bool)) {
	i := skipSpace(v, 0)
	if i >= len(v) {
		return
	}
	switch v[i] {
	case '{':
		walk(v[i:], func(ks, ke, vs, ve int) bool {
			val := v[i+vs : i+ve]
			if member(v[i+ks+1:i+ke-1], val) {
				Walk(val, member)
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
			Walk(v[i:e], member)
			i = skipSpace(v, e) // at ',' or ']'
			if v[i] == ']' {
				return
			}
			i = skipSpace(v, i+1)
		}
	}
}
