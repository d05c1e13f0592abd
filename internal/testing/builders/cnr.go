package builders

import (
	"strconv"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rdmatopo/rdmatopo/core/ledger"
)

// RDMATorPrefix prefixes the KCNR property naming a NIC's leaf switch.
const RDMATorPrefix = "RDMATOR/"

// CNRWrapper builds a KCNR shaped like the provider's: one Socket per NUMA
// zone (same id), NIC zones under the NUMA zones and one RDMATOR/<pci>
// property per NIC with a leaf.
type CNRWrapper struct {
	cnr v1alpha1.CustomNodeResource
	// numa holds the NUMA zones by id, in the order they were first named.
	numa  map[int]*v1alpha1.TopologyZone
	order []int
	// flat lists NUMA zones at the top level instead of under Sockets.
	flat bool
	// extra zones are appended to the top level verbatim.
	extra []*v1alpha1.TopologyZone
}

// MakeCNR starts an empty KCNR named after its node.
func MakeCNR(name string) *CNRWrapper {
	return &CNRWrapper{
		cnr: v1alpha1.CustomNodeResource{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "CustomNodeResource"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
		},
		numa: map[int]*v1alpha1.TopologyZone{},
	}
}

// Policy sets status.topologyPolicy.
func (w *CNRWrapper) Policy(p v1alpha1.TopologyPolicy) *CNRWrapper {
	w.cnr.Status.TopologyPolicy = p
	return w
}

// ResourceVersion sets metadata.resourceVersion.
func (w *CNRWrapper) ResourceVersion(rv string) *CNRWrapper {
	w.cnr.ResourceVersion = rv
	return w
}

// Generation sets metadata.generation.
func (w *CNRWrapper) Generation(g int64) *CNRWrapper {
	w.cnr.Generation = g
	return w
}

// Flat lists NUMA zones at the top level of status.topologyZone, without
// Socket parents.
func (w *CNRWrapper) Flat() *CNRWrapper {
	w.flat = true
	return w
}

// Zone sets the allocatable (and capacity) GPUs and CPU millicores of a NUMA
// zone, creating it if needed.
func (w *CNRWrapper) Zone(numa int, gpu, cpuMilli int64) *CNRWrapper {
	z := w.zone(numa)
	setQty(z.Resources.Allocatable, GPUResource, *resource.NewQuantity(gpu, resource.DecimalSI))
	setQty(z.Resources.Capacity, GPUResource, *resource.NewQuantity(gpu, resource.DecimalSI))
	setQty(z.Resources.Allocatable, corev1.ResourceCPU, *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI))
	setQty(z.Resources.Capacity, corev1.ResourceCPU, *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI))
	return w
}

// NIC adds a NIC zone (one RDMA unit) under a NUMA zone and, when leaf is not
// empty, the property RDMATOR/<pci> = leaf. The NUMA zone's RDMA allocatable
// grows by one.
func (w *CNRWrapper) NIC(pci string, numa int, leaf string) *CNRWrapper {
	z := w.zone(numa)
	one := *resource.NewQuantity(1, resource.DecimalSI)
	z.Children = append(z.Children, &v1alpha1.TopologyZone{
		Type: v1alpha1.TopologyTypeNIC,
		Name: pci,
		Resources: v1alpha1.Resources{
			Allocatable: &corev1.ResourceList{RDMAResource: one},
			Capacity:    &corev1.ResourceList{RDMAResource: one},
		},
	})
	addQty(*z.Resources.Allocatable, RDMAResource, 1)
	addQty(*z.Resources.Capacity, RDMAResource, 1)
	if leaf != "" {
		w.Property(RDMATorPrefix+pci, leaf)
	}
	return w
}

// Alloc records an allocation on a NUMA zone (requests such as GPUs and CPU).
func (w *CNRWrapper) Alloc(numa int, consumer string, req corev1.ResourceList) *CNRWrapper {
	z := w.zone(numa)
	r := req.DeepCopy()
	z.Allocations = append(z.Allocations, &v1alpha1.Allocation{Consumer: consumer, Requests: &r})
	return w
}

// UseNIC records that consumer holds the NIC: one RDMA unit on the NIC zone
// and on its NUMA zone, as katalyst reports it. Unknown NICs are ignored.
func (w *CNRWrapper) UseNIC(pci, consumer string) *CNRWrapper {
	return w.UseNICUnits(pci, consumer, 1)
}

// UseNICUnits records that consumer holds units RDMA units of the NIC, on the
// NIC zone and on its NUMA zone. Unknown NICs are ignored.
func (w *CNRWrapper) UseNICUnits(pci, consumer string, units int64) *CNRWrapper {
	z, nic := w.nicZone(pci)
	if nic == nil {
		return w
	}
	nic.Allocations = append(nic.Allocations, rdmaAllocation(consumer, units))
	for _, a := range z.Allocations {
		if a.Consumer == consumer && a.Requests != nil {
			addQty(*a.Requests, RDMAResource, units)
			return w
		}
	}
	z.Allocations = append(z.Allocations, rdmaAllocation(consumer, units))
	return w
}

// AllocNIC records an allocation on the NIC zone named pci with the given
// requests (nil: an allocation without requests, as an agent that does not
// count units reports a NIC it gave away; consumer may be empty). The NUMA
// zone is left alone. Unknown NICs are ignored.
func (w *CNRWrapper) AllocNIC(pci, consumer string, req corev1.ResourceList) *CNRWrapper {
	_, nic := w.nicZone(pci)
	if nic == nil {
		return w
	}
	a := &v1alpha1.Allocation{Consumer: consumer}
	if req != nil {
		r := req.DeepCopy()
		a.Requests = &r
	}
	nic.Allocations = append(nic.Allocations, a)
	return w
}

// Units sets the NIC zone's RDMA allocatable and capacity to units (which may
// be negative, to build bad data); the NUMA zone's RDMA allocatable and
// capacity follow. Unknown NICs are ignored.
func (w *CNRWrapper) Units(pci string, units int64) *CNRWrapper {
	z, nic := w.nicZone(pci)
	if nic == nil {
		return w
	}
	old := (*nic.Resources.Allocatable)[RDMAResource]
	delta := units - old.Value()
	setQty(nic.Resources.Allocatable, RDMAResource, *resource.NewQuantity(units, resource.DecimalSI))
	setQty(nic.Resources.Capacity, RDMAResource, *resource.NewQuantity(units, resource.DecimalSI))
	addQty(*z.Resources.Allocatable, RDMAResource, delta)
	addQty(*z.Resources.Capacity, RDMAResource, delta)
	return w
}

// Allocatable sets one resource of a NUMA zone's allocatable to qty (a
// Kubernetes quantity, possibly negative, to build bad data), creating the
// zone if needed.
func (w *CNRWrapper) Allocatable(numa int, name corev1.ResourceName, qty string) *CNRWrapper {
	setQty(w.zone(numa).Resources.Allocatable, name, resource.MustParse(qty))
	return w
}

// nicZone finds the NIC zone named pci and its NUMA zone (nil, nil if none).
func (w *CNRWrapper) nicZone(pci string) (numa, nic *v1alpha1.TopologyZone) {
	for _, id := range w.order {
		z := w.numa[id]
		for _, c := range z.Children {
			if c != nil && c.Type == v1alpha1.TopologyTypeNIC && c.Name == pci {
				return z, c
			}
		}
	}
	return nil, nil
}

func rdmaAllocation(consumer string, units int64) *v1alpha1.Allocation {
	return &v1alpha1.Allocation{
		Consumer: consumer,
		Requests: &corev1.ResourceList{RDMAResource: *resource.NewQuantity(units, resource.DecimalSI)},
	}
}

// Property appends a spec.nodeResourceProperties entry.
func (w *CNRWrapper) Property(name string, values ...string) *CNRWrapper {
	p := &v1alpha1.Property{PropertyName: name}
	if len(values) > 0 {
		p.PropertyValues = append([]string(nil), values...)
	}
	w.cnr.Spec.NodeResourceProperties = append(w.cnr.Spec.NodeResourceProperties, p)
	return w
}

// NilProperty appends a null spec.nodeResourceProperties entry.
func (w *CNRWrapper) NilProperty() *CNRWrapper {
	w.cnr.Spec.NodeResourceProperties = append(w.cnr.Spec.NodeResourceProperties, nil)
	return w
}

// TopZone appends a raw zone (possibly nil or malformed) to the top level of
// status.topologyZone, after the generated ones.
func (w *CNRWrapper) TopZone(z *v1alpha1.TopologyZone) *CNRWrapper {
	w.extra = append(w.extra, z)
	return w
}

// ChildZone appends a raw zone (possibly nil or malformed) under a NUMA zone.
func (w *CNRWrapper) ChildZone(numa int, z *v1alpha1.TopologyZone) *CNRWrapper {
	nz := w.zone(numa)
	nz.Children = append(nz.Children, z)
	return w
}

// Obj returns a copy of the KCNR built so far.
func (w *CNRWrapper) Obj() *v1alpha1.CustomNodeResource {
	out := w.cnr.DeepCopy()
	zones := make([]*v1alpha1.TopologyZone, 0, len(w.order)+len(w.extra))
	for _, id := range w.order {
		z := w.numa[id].DeepCopy()
		if w.flat {
			zones = append(zones, z)
			continue
		}
		zones = append(zones, &v1alpha1.TopologyZone{
			Type:     v1alpha1.TopologyTypeSocket,
			Name:     z.Name,
			Children: []*v1alpha1.TopologyZone{z},
		})
	}
	for _, z := range w.extra {
		zones = append(zones, z.DeepCopy())
	}
	out.Status.TopologyZone = zones
	return out
}

// zone returns the NUMA zone with the given id, creating it.
func (w *CNRWrapper) zone(numa int) *v1alpha1.TopologyZone {
	if z, ok := w.numa[numa]; ok {
		return z
	}
	z := &v1alpha1.TopologyZone{
		Type: v1alpha1.TopologyTypeNuma,
		Name: strconv.Itoa(numa),
		Resources: v1alpha1.Resources{
			Allocatable: &corev1.ResourceList{},
			Capacity:    &corev1.ResourceList{},
		},
	}
	w.numa[numa] = z
	w.order = append(w.order, numa)
	return z
}

func setQty(l *corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	(*l)[name] = q
}

func addQty(l corev1.ResourceList, name corev1.ResourceName, n int64) {
	q := l[name]
	q.Add(*resource.NewQuantity(n, resource.DecimalSI))
	l[name] = q
}

// Consumer formats a KCNR consumer id (ledger.ConsumerID).
func Consumer(namespace, name, uid string) string {
	return ledger.ConsumerID(namespace, name, uid)
}
