package schema

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Limits on a schema given to Compile.
const (
	MaxSchemaBytes = 1 << 20 // 1 MiB of JSON text
	MaxSchemaDepth = 128     // nested objects and arrays in the schema's JSON
	// MaxSchemaObjects bounds the JSON objects (roughly, schema nodes) in a
	// schema: the validator's compiler takes time quadratic in their number
	// (about 0.2 s for 5 000 on one core).
	MaxSchemaObjects = 5_000
	// MaxFanOut bounds how many schema nodes may apply to one location of an
	// argument value (through $ref, allOf, anyOf, … and nested properties);
	// it keeps a small schema from costing exponential validation time.
	MaxFanOut = 10_000
)

// ErrInvalidSchema is wrapped by every error Compile returns.
var ErrInvalidSchema = errors.New("invalid input schema")

// baseURL names the schema being compiled. Relative references resolve
// against it, and to nothing: no URL is ever loaded.
const baseURL = "https://toolgate.invalid/input-schema.json"

// Schema is a compiled input schema. It is safe for concurrent use.
type Schema struct {
	root     *jsonschema.Schema
	byLoc    map[string]*jsonschema.Schema // every node by its location, for error messages
	requires bool                          // the root requires properties
	emptyOK  bool                          // {} is valid
	fast     *fnode                        // the fast validator, when it covers every node
	repair   *rnode                        // the repair plan
}

// Compile compiles a tool's input schema: JSON Schema 2020-12, or another
// draft (draft-07, …) when its $schema says so. It refuses hostile schemas:
// over MaxSchemaBytes, MaxSchemaDepth or MaxSchemaObjects, a $ref to anything but the schema
// itself (nothing is loaded from the network or the disk), a cycle of
// references that consumes no input ({"$ref":"#"} at the root), or a
// structure that would apply more than MaxFanOut schema nodes to one value.
// Patterns use Go's RE2 syntax (linear time); ECMAScript-only constructs
// such as look-ahead are refused.
func Compile(raw json.RawMessage) (*Schema, error) { return compile(raw, true) }

// compile is Compile; with metaFast, a schema that metaValid accepts skips
// the validator's check against the meta-schema.
func compile(raw json.RawMessage, metaFast bool) (*Schema, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the limit of %d", ErrInvalidSchema, len(raw), MaxSchemaBytes)
	}
	doc, objects, serr := decodeCounting(raw, MaxSchemaDepth)
	if serr != nil {
		return nil, fmt.Errorf("%w: at byte %d: %s", ErrInvalidSchema, serr.Offset, serr.Msg)
	}
	if objects > MaxSchemaObjects {
		return nil, fmt.Errorf("%w: %d objects, over the limit of %d", ErrInvalidSchema, objects, MaxSchemaObjects)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, fmt.Errorf("%w: the schema must be a JSON object, got %s", ErrInvalidSchema, jsonKind(doc))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	// SkipMetaValidation is third_party/jsonschema's; upstream's compiler
	// checks every schema against the meta-schema: same result, slower.
	if skip, ok := any(c).(interface{ SkipMetaValidation() }); ok && metaFast && metaValid(doc) {
		skip.SkipMetaValidation()
	}
	if err := c.AddResource(baseURL, doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	root, err := c.Compile(baseURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	s := &Schema{root: root, byLoc: map[string]*jsonschema.Schema{}}
	fast := walk(root, s.byLoc)
	if err := checkFanOut(root); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	if fast {
		s.fast = buildFast(root)
	}
	s.repair = buildRepair(root)
	s.requires = len(required(root)) > 0
	s.emptyOK = root.Validate(map[string]any{}) == nil
	return s, nil
}

// Requires reports whether the schema has required top-level properties
// (through $ref and allOf too).
func (s *Schema) Requires() bool { return s.requires }

// required lists the top-level required properties of sch.
func required(sch *jsonschema.Schema) []string {
	var out []string
	forEachInPlace(sch, func(n *jsonschema.Schema) {
		if !refOnly(n) {
			out = append(out, n.Required...)
		}
	})
	return out
}

// forEachInPlace calls fn for sch and every schema that must hold at the same
// location: its $ref and allOf members, transitively, each node once.
func forEachInPlace(sch *jsonschema.Schema, fn func(*jsonschema.Schema)) {
	var seen []*jsonschema.Schema
	var visit func(*jsonschema.Schema)
	visit = func(n *jsonschema.Schema) {
		if n == nil {
			return
		}
		for _, m := range seen {
			if m == n {
				return
			}
		}
		seen = append(seen, n)
		fn(n)
		visit(n.Ref)
		if refOnly(n) {
			return
		}
		for _, a := range n.AllOf {
			visit(a)
		}
	}
	visit(sch)
}

// refOnly reports whether n is a draft-07 (or older) schema with a $ref:
// then only its type, enum and const are checked besides the $ref, and
// every other sibling keyword is ignored (as the validator does).
func refOnly(n *jsonschema.Schema) bool { return n.DraftVersion < 2019 && n.Ref != nil }

// noLoader refuses every URL: a schema may only refer to itself.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("refusing to load %q: only local references (\"#...\") are allowed", url)
}
