// Package helm holds the tests of toolgate's Helm chart (the folder
// toolgate beside this file): golden renders for each sandbox.mode and for
// sandbox.backend=kubernetes, made by the pinned helm of tools/go.mod,
// every rendered manifest decoded strictly into the Kubernetes API types,
// and the pods checked against Pod Security's levels by
// k8s.io/pod-security-admission. It has no code of its own.
package helm
