package ledger

import (
	"fmt"
)

// AnnotationError is one scheduler annotation of a bound pod that cannot be
// fully read.
type AnnotationError struct {
	// Key is the annotation (AnnotationNICs, AnnotationNUMA or AnnotationS0).
	Key string
	// Err says what is wrong; it wraps ErrBadAnnotation.
	Err error
}

// Error renders "annotation KEY: ERR".
func (e *AnnotationError) Error() string { return "annotation " + e.Key + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *AnnotationError) Unwrap() error { return e.Err }

// PodError is a problem Rebuild found with one bound pod's scheduler
// annotations: an annotation it cannot fully read, a NIC the fabric does not
// show on the pod's node, or a NIC another pod holds.
type PodError struct {
	// Namespace, Name and UID identify the pod.
	Namespace, Name, UID string
	// Key is the annotation at fault.
	Key string
	// Err says what is wrong and what Rebuild kept.
	Err error
}

// Error renders "pod NS/NAME: annotation KEY: ERR".
func (e *PodError) Error() string {
	return fmt.Sprintf("pod %s/%s: annotation %s: %v", e.Namespace, e.Name, e.Key, e.Err)
}

// Unwrap returns the cause.
func (e *PodError) Unwrap() error { return e.Err }

// CheckAnnotations reports, in key order (nics, numa, s0), every scheduler
// annotation of a bound pod that cannot be fully read. A pod whose
// AnnotationNICs is missing or empty holds nothing and has nothing to check.
// Otherwise AnnotationNICs must parse (ParseNICs: no empty item, no
// whitespace, no NIC twice), AnnotationNUMA must be present and list at least
// one NUMA id (ParseNUMA), and AnnotationS0, when present, must parse
// (ParseS0).
func CheckAnnotations(ann map[string]string) []*AnnotationError {
	raw := ann[AnnotationNICs]
	if raw == "" {
		return nil
	}
	var out []*AnnotationError
	bad := func(key string, err error) {
		out = append(out, &AnnotationError{Key: key, Err: err})
	}
	if _, err := ParseNICs(raw); err != nil {
		bad(AnnotationNICs, err)
	}
	switch numa, ok := ann[AnnotationNUMA]; {
	case !ok:
		bad(AnnotationNUMA, fmt.Errorf("%w: missing while %s is set", ErrBadAnnotation, AnnotationNICs))
	default:
		ids, err := ParseNUMA(numa)
		switch {
		case err != nil:
			bad(AnnotationNUMA, err)
		case len(ids) == 0:
			bad(AnnotationNUMA, fmt.Errorf("%w: empty while %s is set", ErrBadAnnotation, AnnotationNICs))
		}
	}
	if s0, ok := ann[AnnotationS0]; ok {
		if _, err := ParseS0(s0); err != nil {
			bad(AnnotationS0, err)
		}
	}
	return out
}
