// Package librarytest holds one test, TestUpstreamModules: toolgate as a
// library user gets it. go.mod's replace lines (the patched go-sdk and
// jsonschema in third_party) apply only inside toolgate's module; a module
// that requires toolgate gets the upstream versions go.mod names. The test
// builds and vets such a module, which imports every package that is not
// internal or a command, and runs its program (testdata/main.go), in which
// each fallback of a patched method runs.
package librarytest
