package topology

import (
	"slices"
	"strings"
	"sync"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// TrimCNR returns a KCNR holding only what BuildNode and Cache read: the
// name, uid, resourceVersion and generation; spec.nodeResourceProperties
// with the values of the RDMATOR/ properties only (every entry keeps its
// place, so problems name the same index); status.topologyPolicy; and the
// zone tree with each zone's type, name, allocation consumers and children,
// plus the allocatable and the allocation requests of Numa and NIC zones.
// Labels, annotations, managedFields, taints, status resources, conditions,
// metrics, zone attributes and siblings are dropped. BuildNode gives the same
// Node for the trimmed KCNR as for the full one.
//
// The result shares resource lists, property values and strings with cnr,
// which must not be modified afterwards. Nil gives nil; TrimCNR of a trimmed
// KCNR is an equal KCNR.
func TrimCNR(cnr *v1alpha1.CustomNodeResource) *v1alpha1.CustomNodeResource {
	return trimCNR(cnr, nil)
}

// maxSharedLists bounds the resource lists a CNRTrimmer keeps for sharing.
const maxSharedLists = 4096

// CNRTrimmer trims KCNRs like TrimCNR and, in addition, makes the KCNRs it
// trimmed share one resource list wherever their lists are equal (the same
// names with the same quantity strings): the zones of a node shape and the
// allocations of a pod shape repeat on every node, and a decoded resource
// list costs several hundred bytes however few entries it has. It keeps at
// most maxSharedLists distinct lists; lists beyond those are kept as they
// are. A KCNR informer sets Trim as its transform so that its store keeps
// only what the fabric reads. Safe for concurrent use.
type CNRTrimmer struct {
	mu    sync.Mutex
	lists *ListPool
}

// NewCNRTrimmer returns a trimmer sharing no lists yet.
func NewCNRTrimmer() *CNRTrimmer {
	return &CNRTrimmer{lists: NewListPool(maxSharedLists)}
}

// Trim returns TrimCNR(cnr), its resource lists shared with those of the
// KCNRs trimmed before. The lists must not be modified.
func (t *CNRTrimmer) Trim(cnr *v1alpha1.CustomNodeResource) *v1alpha1.CustomNodeResource {
	t.mu.Lock()
	defer t.mu.Unlock()
	return trimCNR(cnr, t.share)
}

// ShareLists makes the resource lists of cnr's zone tree (each zone's
// allocatable and capacity, each allocation's requests) the lists kept
// equal to them, in place, keeping lists not seen before; nothing is
// dropped. A store of many KCNRs of a few node and pod shapes (a simulated
// API server) then holds each distinct list once. The lists of cnr must not
// be modified afterwards: a writer deep-copies the KCNR first. Nil is
// ignored.
func (t *CNRTrimmer) ShareLists(cnr *v1alpha1.CustomNodeResource) {
	if cnr == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.shareZones(cnr.Status.TopologyZone)
}

// shareZones is ShareLists over a zone list and its children. t.mu must be
// held.
func (t *CNRTrimmer) shareZones(zones []*v1alpha1.TopologyZone) {
	for _, z := range zones {
		if z == nil {
			continue
		}
		z.Resources.Allocatable = t.share(z.Resources.Allocatable)
		z.Resources.Capacity = t.share(z.Resources.Capacity)
		for _, a := range z.Allocations {
			if a != nil {
				a.Requests = t.share(a.Requests)
			}
		}
		t.shareZones(z.Children)
	}
}

// share returns the kept list equal to l (ListPool.Share). t.mu must be
// held.
func (t *CNRTrimmer) share(l *corev1.ResourceList) *corev1.ResourceList {
	return t.lists.Share(l)
}

// ListPool keeps one resource list of each distinct content (the same names
// with the same quantity strings), up to a bound: objects of a few shapes
// repeated many times then hold each distinct list once. Not safe for
// concurrent use.
type ListPool struct {
	max   int
	lists map[string]*corev1.ResourceList
	key   []byte
	names []string
}

// NewListPool returns a pool keeping at most max distinct lists; lists
// beyond those are kept as they are.
func NewListPool(max int) *ListPool {
	return &ListPool{max: max, lists: map[string]*corev1.ResourceList{}}
}

// Share returns the kept list equal to l, keeping l if none is and the
// pool has room. Nil gives nil. The lists kept must not be modified.
func (p *ListPool) Share(l *corev1.ResourceList) *corev1.ResourceList {
	if l == nil {
		return nil
	}
	p.names = p.names[:0]
	for name := range *l {
		p.names = append(p.names, string(name))
	}
	slices.Sort(p.names)
	p.key = p.key[:0]
	for _, name := range p.names {
		q := (*l)[corev1.ResourceName(name)]
		p.key = append(p.key, name...)
		p.key = append(p.key, '=')
		p.key = append(p.key, q.String()...)
		p.key = append(p.key, 0)
	}
	if kept, ok := p.lists[string(p.key)]; ok {
		return kept
	}
	if len(p.lists) < p.max {
		p.lists[string(p.key)] = l
	}
	return l
}

// trimCNR is TrimCNR with every kept resource list passed through share
// (nil: kept as they are).
func trimCNR(cnr *v1alpha1.CustomNodeResource, share func(*corev1.ResourceList) *corev1.ResourceList) *v1alpha1.CustomNodeResource {
	if share == nil {
		share = func(l *corev1.ResourceList) *corev1.ResourceList { return l }
	}
	if cnr == nil {
		return nil
	}
	out := &v1alpha1.CustomNodeResource{}
	out.Name, out.UID = cnr.Name, cnr.UID
	out.ResourceVersion, out.Generation = cnr.ResourceVersion, cnr.Generation
	if props := cnr.Spec.NodeResourceProperties; props != nil {
		out.Spec.NodeResourceProperties = make([]*v1alpha1.Property, len(props))
		for i, p := range props {
			if p == nil {
				continue
			}
			q := &v1alpha1.Property{PropertyName: p.PropertyName}
			if strings.HasPrefix(p.PropertyName, RDMATorPrefix) {
				q.PropertyValues = p.PropertyValues
			}
			out.Spec.NodeResourceProperties[i] = q
		}
	}
	out.Status.TopologyPolicy = cnr.Status.TopologyPolicy
	out.Status.TopologyZone = trimZones(cnr.Status.TopologyZone, share)
	return out
}

// trimZones trims a zone list, keeping nil entries in place.
func trimZones(zones []*v1alpha1.TopologyZone, share func(*corev1.ResourceList) *corev1.ResourceList) []*v1alpha1.TopologyZone {
	if zones == nil {
		return nil
	}
	out := make([]*v1alpha1.TopologyZone, len(zones))
	for i, z := range zones {
		if z == nil {
			continue
		}
		// Only Numa and NIC zones are read for quantities (readNUMA,
		// readNIC); every zone is read for its consumers.
		quantities := z.Type == v1alpha1.TopologyTypeNuma || z.Type == v1alpha1.TopologyTypeNIC
		t := &v1alpha1.TopologyZone{Type: z.Type, Name: z.Name, Children: trimZones(z.Children, share)}
		if quantities {
			t.Resources.Allocatable = share(z.Resources.Allocatable)
		}
		if z.Allocations != nil {
			t.Allocations = make([]*v1alpha1.Allocation, len(z.Allocations))
			for j, a := range z.Allocations {
				if a == nil {
					continue
				}
				b := &v1alpha1.Allocation{Consumer: a.Consumer}
				if quantities {
					b.Requests = share(a.Requests)
				}
				t.Allocations[j] = b
			}
		}
		out[i] = t
	}
	return out
}
