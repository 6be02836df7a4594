package schema

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Repair kinds.
const (
	RepairStringToNumber  = "string_to_number"  // "42" → 42 where a number or integer is wanted
	RepairStringToBoolean = "string_to_boolean" // "true" → true where a boolean is wanted
	RepairStringToObject  = "string_to_object"  // "{\"a\":1}" → {"a":1} where an object is wanted
	RepairStringToArray   = "string_to_array"   // "[1,2]" → [1,2] where an array is wanted
	RepairWrapInArray     = "wrap_in_array"     // "a.txt" → ["a.txt"] where an array of such items is wanted
)

// Repair is one change that Schema.Repair made to the arguments.
type Repair struct {
	Pointer string `json:"pointer"` // JSON pointer of the repaired value ("" is the root)
	From    string `json:"from"`    // the value before, as short JSON, e.g. `"42"`
	To      string `json:"to"`      // the value after, e.g. `42`
	Kind    string `json:"kind"`    // one of the Repair* constants
}

// Repair applies safe, schema-guided repairs to args and reports each one.
//
// A repair happens only where the schema demands a type that the value does
// not have (through properties, items, additionalProperties, $ref and
// allOf: keywords that must hold), and the value converts to exactly one
// value of the wanted type:
//   - a string whose whole text is a JSON number → that number, where a
//     number is wanted; where only an integer is wanted, only digits
//     ("42", "-7"): "42.0", "42abc", " 42", "0x2A" and out-of-range
//     numbers such as "1e400" stay strings;
//   - "true" or "false" → the boolean, where a boolean is wanted; other
//     spellings ("TRUE", "True", "yes", "1") stay strings: they are not
//     JSON, and guessing what they mean is the model's job, told by the
//     validation error;
//   - a string holding a JSON object or array → that value, where an
//     object or array is wanted (and the text parses to that type);
//   - a value that is not an array (nor null) → a one-item array, where an
//     array is wanted and its item schema accepts the value's type.
//
// Nothing is repaired where the schema already accepts the value's type
// (type ["string","number"] keeps "42"), inside anyOf, oneOf, not or
// if/then/else (which alternative was meant is a guess), or by renaming
// misspelled properties. Hence a repair never turns valid arguments
// invalid, and repairing twice changes nothing the second time.
//
// args is not modified: when something is repaired, Repair returns a copy
// (sharing what did not change) and the repairs in the order of their
// pointers; otherwise it returns args itself.
func (s *Schema) Repair(args map[string]any) (map[string]any, []Repair) {
	if s.repair == nil || len(args) == 0 {
		return args, nil
	}
	if !needsRepair(s.repair, args, 0) {
		return args, nil // the common case: no allocation
	}
	r := repairer{}
	out, changed := r.value(s.repair, args, nil, 0)
	if !changed {
		return args, nil
	}
	m, ok := out.(map[string]any)
	if !ok { // cannot happen: the root is an object and is never replaced by another type
		return args, nil
	}
	// In the order of their pointers, not of the walk over maps: the
	// same call gets the same metadata (and audit record). Stable: a value
	// repaired twice (by two allOf members' schemas of its key) keeps its
	// repairs in the order they were made.
	slices.SortStableFunc(r.done, func(a, b Repair) int { return strings.Compare(a.Pointer, b.Pointer) })
	return m, r.done
}

// rnode is a compiled schema node reduced to what Repair needs: the types
// that must hold at a location and where to look for member schemas.
type rnode struct {
	wanted  uint8     // types every applicable schema allows (integer implied by number); 0: any
	members []*member // this node and its $ref/allOf schemas
	// live is set when some value here or below could be repaired: the
	// node wants a type that a value can be converted to, or has a live
	// member schema. needsRepair stops at a node that is not live.
	live bool
	// liveProps are the members' properties whose schema is live, and
	// liveExtra is set when a member's additionalProperties is: without
	// it, only the values of liveProps can need a repair.
	liveProps []liveProp
	liveExtra bool
	liveFirst uint64 // bit c&63 set for each first byte c of liveProps' keys
}

type liveProp struct {
	key   string
	child *rnode
}

type member struct {
	props  map[string]*rnode
	extra  *rnode   // additionalProperties
	prefix []*rnode // prefixItems (or draft-07 items array)
	rest   *rnode   // items after the prefix
}

func buildRepair(root *jsonschema.Schema) *rnode {
	memo := map[*jsonschema.Schema]*rnode{}
	var build func(*jsonschema.Schema) *rnode
	build = func(s *jsonschema.Schema) *rnode {
		if s == nil {
			return nil
		}
		if n, ok := memo[s]; ok {
			return n
		}
		n := &rnode{}
		memo[s] = n
		wanted, constrained := uint8(0xff), false
		forEachInPlace(s, func(x *jsonschema.Schema) {
			if x.Bool != nil {
				return
			}
			if m := typeMask(x.Types); m != 0 {
				if m&tNumber != 0 {
					m |= tInteger
				}
				wanted &= m
				constrained = true
			}
			if refOnly(x) {
				return // draft-07: other siblings of $ref are ignored
			}
			mb := &member{}
			for k, p := range x.Properties {
				if mb.props == nil {
					mb.props = map[string]*rnode{}
				}
				mb.props[k] = build(p)
			}
			// A key a pattern matches is not an additional property:
			// which keys match is not guessed, so with patternProperties
			// additionalProperties repairs nothing.
			if a, ok := x.AdditionalProperties.(*jsonschema.Schema); ok && len(x.PatternProperties) == 0 {
				mb.extra = build(a)
			}
			for _, p := range x.PrefixItems {
				mb.prefix = append(mb.prefix, build(p))
			}
			switch it := x.Items.(type) {
			case *jsonschema.Schema:
				mb.rest = build(it)
			case []*jsonschema.Schema:
				for _, p := range it {
					mb.prefix = append(mb.prefix, build(p))
				}
				if a, ok := x.AdditionalItems.(*jsonschema.Schema); ok {
					mb.rest = build(a)
				}
			}
			if x.Items2020 != nil {
				mb.rest = build(x.Items2020)
			}
			if mb.props != nil || mb.extra != nil || mb.prefix != nil || mb.rest != nil {
				n.members = append(n.members, mb)
			}
		})
		if constrained {
			n.wanted = wanted
			if wanted == 0 {
				n.wanted = 0 // contradictory types: nothing to aim for
			}
		}
		return n
	}
	top := build(root)
	markLive(slices.Collect(maps.Values(memo)))
	return top
}

// markLive sets live, liveProps and liveExtra on every node of a repair
// plan (nodes may refer to each other in cycles: it repeats until nothing
// changes).
func markLive(nodes []*rnode) {
	isLive := func(n *rnode) bool { return n != nil && n.live }
	for _, n := range nodes {
		n.live = n.wanted&(tNumber|tInteger|tBoolean|tObject|tArray) != 0 // convert's targets
	}
	for changed := true; changed; {
		changed = false
		for _, n := range nodes {
			if n.live {
				continue
			}
			for _, mb := range n.members {
				if isLive(mb.extra) || isLive(mb.rest) || slices.ContainsFunc(mb.prefix, isLive) ||
					slices.ContainsFunc(slices.Collect(maps.Values(mb.props)), isLive) {
					n.live, changed = true, true
					break
				}
			}
		}
	}
	for _, n := range nodes {
		for _, mb := range n.members {
			n.liveExtra = n.liveExtra || isLive(mb.extra)
			for _, k := range slices.Sorted(maps.Keys(mb.props)) {
				if isLive(mb.props[k]) {
					n.liveProps = append(n.liveProps, liveProp{k, mb.props[k]})
					if k != "" {
						n.liveFirst |= 1 << (k[0] & 63)
					}
				}
			}
		}
	}
}

type repairer struct {
	done []Repair
}

// step is one step of the path from the root to the value being repaired,
// kept on the stack: the pointer is only rendered when a repair happens.
type step struct {
	up    *step
	key   string
	index int // -1: key names an object member
}

func (p *step) tokens() []string {
	var t []string
	for ; p != nil; p = p.up {
		if p.index >= 0 {
			t = append(t, strconv.Itoa(p.index))
		} else {
			t = append(t, p.key)
		}
	}
	slices.Reverse(t)
	return t
}

func (r *repairer) record(at *step, from, to any, kind string) {
	r.done = append(r.done, Repair{Pointer: pointer(at.tokens()), From: short(from), To: short(to), Kind: kind})
}

// value repairs v against n and reports whether it changed.
func (r *repairer) value(n *rnode, v any, at *step, depth int) (any, bool) {
	if n == nil || depth > MaxArgumentDepth {
		return v, false
	}
	changed := false
	if n.wanted != 0 && v != nil && !typeMatches(n.wanted, v) {
		if nv, kind := convert(n, v, depth); kind != "" {
			r.record(at, v, nv, kind)
			v, changed = nv, true
		}
	}
	switch x := v.(type) {
	case map[string]any:
		var out map[string]any
		for k, item := range x {
			here := step{up: at, key: k, index: -1}
			for _, mb := range n.members {
				child := mb.extra
				if p, ok := mb.props[k]; ok {
					child = p
				}
				if nv, ok := r.value(child, item, &here, depth+1); ok {
					if out == nil {
						out = maps.Clone(x)
					}
					out[k], item = nv, nv
				}
			}
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, item := range x {
			here := step{up: at, index: i}
			for _, mb := range n.members {
				child := mb.rest
				if i < len(mb.prefix) {
					child = mb.prefix[i]
				}
				if nv, ok := r.value(child, item, &here, depth+1); ok {
					if out == nil {
						out = slices.Clone(x)
					}
					out[i], item = nv, nv
				}
			}
		}
		if out != nil {
			return out, true
		}
	}
	return v, changed
}

// needsRepair reports whether value would change anything, without
// recording where (that would cost allocations on every call).
func needsRepair(n *rnode, v any, depth int) bool {
	if n == nil || !n.live || depth > MaxArgumentDepth {
		return false
	}
	if n.wanted != 0 && v != nil && !typeMatches(n.wanted, v) {
		if _, kind := convert(n, v, depth); kind != "" {
			return true
		}
	}
	switch x := v.(type) {
	case map[string]any:
		if !n.liveExtra && len(n.liveProps) <= len(x)*len(n.members)+4 {
			// Only the live properties can need a repair: look them up
			// rather than walk the map (which costs more for a few keys).
			for _, p := range n.liveProps {
				if item, ok := x[p.key]; ok && needsRepair(p.child, item, depth+1) {
					return true
				}
			}
			return false
		}
		for k, item := range x {
			for _, mb := range n.members {
				child := mb.extra
				if p, ok := mb.props[k]; ok {
					child = p
				}
				if needsRepair(child, item, depth+1) {
					return true
				}
			}
		}
	case []any:
		for i, item := range x {
			for _, mb := range n.members {
				child := mb.rest
				if i < len(mb.prefix) {
					child = mb.prefix[i]
				}
				if needsRepair(child, item, depth+1) {
					return true
				}
			}
		}
	}
	return false
}

// memberRepairable reports whether the member key: v of an object at n
// may need a repair: false only when needsRepair(n, object) would find
// none in it.
func (n *rnode) memberRepairable(key string, v any) bool {
	if !n.live {
		return false
	}
	if n.liveExtra {
		return true // any key may fall to additionalProperties: let Repair look
	}
	if key != "" && n.liveFirst&(1<<(key[0]&63)) == 0 {
		return false // no live property starts with key's first byte
	}
	for _, p := range n.liveProps {
		if p.key == key && needsRepair(p.child, v, 1) {
			return true
		}
	}
	return false
}

// convert returns v converted to a wanted type, and the kind of repair, or
// "" when no safe repair exists.
func convert(n *rnode, v any, depth int) (any, string) {
	if s, ok := v.(string); ok {
		if n.wanted&(tNumber|tInteger) != 0 {
			if num, ok := numberText(s, n.wanted&tNumber == 0); ok {
				return num, RepairStringToNumber
			}
		}
		if n.wanted&tBoolean != 0 && (s == "true" || s == "false") {
			return s == "true", RepairStringToBoolean
		}
		if n.wanted&(tObject|tArray) != 0 && len(s) > 0 {
			if parsed, err := decodeJSON([]byte(s), MaxArgumentDepth-depth); err == nil {
				switch parsed.(type) {
				case map[string]any:
					if n.wanted&tObject != 0 {
						return parsed, RepairStringToObject
					}
				case []any:
					if n.wanted&tArray != 0 {
						return parsed, RepairStringToArray
					}
				}
			}
		}
	}
	if n.wanted&tArray != 0 && depth < MaxArgumentDepth {
		if _, isArr := v.([]any); !isArr && v != nil && itemAccepts(n, v) {
			return []any{v}, RepairWrapInArray
		}
	}
	return nil, ""
}

// itemAccepts reports whether every item schema for index 0 allows v's type.
func itemAccepts(n *rnode, v any) bool {
	for _, mb := range n.members {
		item := mb.rest
		if len(mb.prefix) > 0 {
			item = mb.prefix[0]
		}
		if item != nil && item.wanted != 0 && !typeMatches(item.wanted, v) {
			return false
		}
	}
	return true
}

// numberText returns s as a number when its whole text is a JSON number
// that fits a float64; integerOnly accepts only digits with an optional '-'.
func numberText(s string, integerOnly bool) (json.Number, bool) {
	sc := scanNumber(s)
	if s == "" || sc.err != "" || sc.end != len(s) || integerOnly && !sc.integral {
		return "", false
	}
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return "", false // out of range: 1e400
	}
	return json.Number(s), true
}
