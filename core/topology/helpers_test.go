package topology_test

import "k8s.io/apimachinery/pkg/api/resource"

func mustQty(s string) resource.Quantity { return resource.MustParse(s) }
