package policy

import _ "embed"

//go:embed toolgate.schema.json
var schemaJSON []byte

// Schema returns the JSON Schema (draft 2020-12) of the policy file, for
// editors and for "toolgate" to print.
func Schema() []byte { return append([]byte(nil), schemaJSON...) }
