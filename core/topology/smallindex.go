package topology

// smallIndex is an insertion-ordered map that avoids hashing for the handful
// of entries a node usually has, switching to a map beyond smallIndexMax.
type smallIndex[K comparable, V any] struct {
	keys []K
	vals []V
	pos  map[K]int
	// kbuf and vbuf back keys and vals while they are short.
	kbuf [8]K
	vbuf [8]V
}

const smallIndexMax = 16

func (s *smallIndex[K, V]) reset() {
	s.keys, s.vals, s.pos = nil, nil, nil
}

func (s *smallIndex[K, V]) get(k K) (V, bool) {
	if s.pos != nil {
		if i, ok := s.pos[k]; ok {
			return s.vals[i], true
		}
	} else {
		for i, key := range s.keys {
			if key == k {
				return s.vals[i], true
			}
		}
	}
	var zero V
	return zero, false
}

// put adds k, which must not be present.
func (s *smallIndex[K, V]) put(k K, v V) {
	if s.keys == nil {
		s.keys, s.vals = s.kbuf[:0], s.vbuf[:0]
	}
	s.keys = append(s.keys, k)
	s.vals = append(s.vals, v)
	switch {
	case s.pos != nil:
		s.pos[k] = len(s.keys) - 1
	case len(s.keys) > smallIndexMax:
		s.pos = make(map[K]int, 2*len(s.keys))
		for i, key := range s.keys {
			s.pos[key] = i
		}
	}
}
