// Package schema compiles, validates and repairs the arguments of tool
// calls against a tool's input JSON Schema.
//
// The engine uses it in three steps: ParseArguments turns a call's raw
// arguments into a JSON object (or a structured error with the byte offset
// and a hint), Schema.Repair applies the few repairs that cannot change a
// valid call's meaning ("42" → 42 where an integer is wanted, …) and reports
// them, and Schema.Validate lists every failing field with its JSON pointer,
// what was expected and what was there; ValidationError turns that list into
// the one error a model reads. Schema.ParseArguments is ParseArguments
// that also says, from each top-level member as it is decoded, whether
// Repair could change anything: most calls need no repair, and then skip
// Repair's walk over the arguments.
//
// # Validator
//
// Validation uses github.com/santhosh-tekuri/jsonschema/v6. It implements
// all of 2020-12 and 2019-09 as well as draft-07 (and -06, -04) selected by
// $schema, passes the official test suite, reports every failure as a tree
// of errors with instance locations and typed error kinds (so this package
// can phrase "expected integer ≥ 1, got integer 0" without parsing English),
// loads nothing unless given a loader (Compile gives one that refuses every
// URL), detects reference cycles while validating, uses RE2 (linear-time)
// regular expressions, and exposes the compiled schema as plain structs, which
// Repair and the fast validator walk. google/jsonschema-go (used for
// inference in package tool) validates too, but only 2020-12 and draft-07
// and with English-only error strings and no instance locations per error.
//
// Santhosh's validator allocates per value it visits, which is too slow for
// the engine's budget (a whole governed call in 2 µs), so valid arguments
// go through a fast path first: the empty object when {} is known valid,
// and otherwise a small validator (fast.go) for schemas that use only the
// common keywords (type, enum, const, properties, required,
// additionalProperties, items, the numeric, string length and pattern
// bounds, $ref, allOf, anyOf, oneOf, not). It only answers valid or not; any
// "not" goes to the full validator for the reasons, and any other keyword
// sends the whole schema there. A fuzz test checks that both agree.
//
// The validator checks every schema against its draft's meta-schema before
// compiling it, and compiling the meta-schema costs milliseconds, once per
// process: too much for a process that runs one call (toolgate call). A
// schema of only the common keywords, each holding a value of the type the
// meta-schema wants, is checked by a few lines instead (meta.go), and the
// validator's check is skipped (third_party/jsonschema's
// SkipMetaValidation); any other schema goes to the meta-schema, and so
// does every schema with upstream's jsonschema, which a module that
// requires toolgate gets. A fuzz test checks that the meta-schema accepts
// whatever the few lines accept.
//
// The JSON parser (jsontext.go) is written by hand: encoding/json reports
// offsets but no hints, accepts duplicate keys and invalid UTF-8, and
// allocates more for small objects.
//
// # Dialects and providers
//
// Normalize rewrites foreign dialects (draft-04/07, OpenAPI 3.0, BFCL's
// Python/Java/JavaScript type names) into 2020-12 and reports each change;
// ToolName and Names turn foreign function names into valid tool names.
// CompileFor compiles a schema for a model API (openai-strict, openai,
// anthropic, gemini) and reports each change; the Compiled's
// ToolArguments maps a model's arguments back to the tool's shape (nulls
// of optional properties removed, JSON strings decoded, names restored).
// Lint checks definitions against the checklist of a good tool and a
// provider's constraints. go run ./schema/internal/bfclreport measures all
// of this on the BFCL v4 data.
//
// Compile refuses hostile schemas (size, depth, remote references,
// reference cycles that consume no input, exponential fan-out); see its
// doc. Pointers are RFC 6901 JSON pointers; the arguments object itself is
// the empty pointer "".
package schema
