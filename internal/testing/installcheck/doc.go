// Package installcheck holds the checks of the install paths: the
// kustomize overlay's and the by-hand route's patches of Volcano's stock
// scheduler Deployment and the Helm values for Volcano's own chart, both read against the Volcano
// v1.10.0 module the project builds with.
package installcheck
