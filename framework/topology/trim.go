package topology

import (
	"strings"

	"github.com/kubewharf/katalyst-api/pkg/apis/node/v1alpha1"
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
// which must not be modified afterwards. A KCNR informer sets it as its
// transform so that its store keeps only this part of each object. Nil
// gives nil; TrimCNR of a trimmed KCNR is an equal KCNR.
func TrimCNR(cnr *v1alpha1.CustomNodeResource) *v1alpha1.CustomNodeResource {
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
	out.Status.TopologyZone = trimZones(cnr.Status.TopologyZone)
	return out
}

// trimZones trims a zone list, keeping nil entries in place.
func trimZones(zones []*v1alpha1.TopologyZone) []*v1alpha1.TopologyZone {
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
		t := &v1alpha1.TopologyZone{Type: z.Type, Name: z.Name, Children: trimZones(z.Children)}
		if quantities {
			t.Resources.Allocatable = z.Resources.Allocatable
		}
		if z.Allocations != nil {
			t.Allocations = make([]*v1alpha1.Allocation, len(z.Allocations))
			for j, a := range z.Allocations {
				if a == nil {
					continue
				}
				b := &v1alpha1.Allocation{Consumer: a.Consumer}
				if quantities {
					b.Requests = a.Requests
				}
				t.Allocations[j] = b
			}
		}
		out[i] = t
	}
	return out
}
