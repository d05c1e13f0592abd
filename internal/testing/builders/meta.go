package builders

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// meta is the builders' one set of metadata setters, embedded in each
// builder whose object has them: obj is the object's metadata, self the
// builder every setter returns for chaining.
type meta[W any] struct {
	obj  *metav1.ObjectMeta
	self W
}

// UID sets metadata.uid.
func (m meta[W]) UID(uid string) W {
	m.obj.UID = types.UID(uid)
	return m.self
}

// Annotation sets an annotation.
func (m meta[W]) Annotation(key, value string) W {
	metav1.SetMetaDataAnnotation(m.obj, key, value)
	return m.self
}

// Annotations sets every annotation of ann (nil: none).
func (m meta[W]) Annotations(ann map[string]string) W {
	for k, v := range ann {
		metav1.SetMetaDataAnnotation(m.obj, k, v)
	}
	return m.self
}

// Label sets a label.
func (m meta[W]) Label(key, value string) W {
	metav1.SetMetaDataLabel(m.obj, key, value)
	return m.self
}

// Created sets metadata.creationTimestamp.
func (m meta[W]) Created(t time.Time) W {
	m.obj.CreationTimestamp = metav1.NewTime(t)
	return m.self
}
