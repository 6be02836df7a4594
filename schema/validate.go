package schema

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/toolgate/toolgate/tool"
)

// FieldError is one way in which arguments break their schema.
type FieldError struct {
	// Pointer is the JSON pointer (RFC 6901) of the failing value: "" is the
	// arguments object itself, "/edits/1/old_string" a nested field. A
	// missing required property has the pointer it should have had.
	Pointer string `json:"pointer"`
	// Expected says what the schema wants there, e.g. "integer ≥ 1",
	// `one of ["a","b"]`, "required property (string)".
	Expected string `json:"expected"`
	// Got says what was there: its type and a short, truncated rendering,
	// e.g. `string "abc"`, or "nothing" for a missing property.
	Got string `json:"got"`
	// Message is one line for a model, e.g. `/count: expected integer ≥ 1, got integer 0`.
	Message string `json:"message"`
}

// Validate checks args against the schema and returns every failing field
// (nil when args are valid), sorted by pointer (array indices in numeric
// order). nil args count as the empty object.
//
// Valid arguments take a fast path: an empty object when {} is known to be
// valid, or the fast validator (fast.go) when the schema uses only common
// keywords. Every value present is always validated.
func (s *Schema) Validate(args map[string]any) []FieldError {
	if args == nil {
		args = map[string]any{}
	}
	if len(args) == 0 && s.emptyOK {
		return nil
	}
	if s.fast != nil && s.fast.valid(args, 0) {
		return nil
	}
	err := s.root.Validate(args)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []FieldError{{Pointer: "", Expected: "valid arguments", Got: "an error", Message: err.Error()}}
	}
	c := collector{s: s, args: args}
	c.collect(ve)
	if len(c.out) == 0 { // never report invalid arguments as valid
		c.add(nil, "valid arguments", "invalid arguments", truncate(err.Error(), 300))
	}
	return sortFields(c.out)
}

type collector struct {
	s    *Schema
	args map[string]any
	out  []FieldError
}

func (c *collector) add(tokens []string, expected, gotText, msg string) {
	p := pointer(tokens)
	if msg == "" {
		msg = "expected " + expected + ", got " + gotText
	}
	c.out = append(c.out, FieldError{Pointer: p, Expected: expected, Got: gotText, Message: label(p) + ": " + msg})
}

func label(p string) string {
	if p == "" {
		return "(arguments)"
	}
	return p
}

func (c *collector) gotAt(tokens []string) string {
	v, ok := at(c.args, tokens)
	if !ok {
		return "nothing"
	}
	return got(v)
}

func (c *collector) collect(e *jsonschema.ValidationError) {
	loc := e.InstanceLocation
	sch := c.s.byLoc[e.SchemaURL]
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, cause := range e.Causes {
			c.collect(cause)
		}
	case *kind.AnyOf, *kind.OneOf:
		if oo, ok := k.(*kind.OneOf); ok && len(oo.Subschemas) > 1 {
			c.add(loc, "exactly one of the alternatives", c.gotAt(loc),
				fmt.Sprintf("matches %d alternatives (%v) where exactly one must match", len(oo.Subschemas), oo.Subschemas))
			return
		}
		// Descend into the one alternative that got past the type check,
		// if there is exactly one; otherwise name the alternatives.
		var near []*jsonschema.ValidationError
		for _, cause := range e.Causes {
			if !typeMismatchAt(cause, loc) {
				near = append(near, cause)
			}
		}
		if len(near) == 1 {
			c.collect(near[0])
			return
		}
		c.add(loc, describe(sch), c.gotAt(loc), "")
	case *kind.Required:
		for _, name := range k.Missing {
			c.missing(loc, sch, name, "")
		}
	case *kind.DependentRequired:
		for _, name := range k.Missing {
			c.missing(loc, sch, name, fmt.Sprintf(" when %q is present", k.Prop))
		}
	case *kind.Dependency:
		for _, name := range k.Missing {
			c.missing(loc, sch, name, fmt.Sprintf(" when %q is present", k.Prop))
		}
	case *kind.AdditionalProperties:
		var allowed []string
		if sch != nil {
			for name := range sch.Properties {
				allowed = append(allowed, name)
			}
			slices.Sort(allowed)
		}
		expected := "no additional properties"
		if len(allowed) > 0 {
			expected += " (allowed: " + truncate(strings.Join(allowed, ", "), 200) + ")"
		}
		for _, name := range k.Properties {
			tokens := append(slices.Clip(loc), name)
			msg := fmt.Sprintf("unknown property %q is not allowed", name)
			if best := closest(name, allowed); best != "" {
				msg += fmt.Sprintf("; did you mean %q?", best)
			} else if len(allowed) > 0 {
				msg += " (allowed: " + truncate(strings.Join(allowed, ", "), 200) + ")"
			}
			c.add(tokens, expected, c.gotAt(tokens), msg)
		}
	case *kind.FalseSchema:
		c.add(loc, "nothing (no value is allowed here)", c.gotAt(loc), "no value is allowed here: remove it")
	case *kind.Not:
		c.add(loc, "a value that does not match the excluded schema", c.gotAt(loc), "")
	case *kind.UniqueItems:
		c.add(loc, describe(sch), c.gotAt(loc), fmt.Sprintf("items %d and %d are equal; items must be unique", k.Duplicates[0], k.Duplicates[1]))
	case *kind.Contains, *kind.MinContains, *kind.MaxContains:
		c.add(loc, "an array whose items match the contains schema", c.gotAt(loc), kindText(k))
	case *kind.PropertyNames:
		tokens := append(slices.Clip(loc), k.Property)
		c.add(tokens, "a property name matching the schema's propertyNames", fmt.Sprintf("property name %q", k.Property), "")
	case *kind.Type, *kind.Enum, *kind.Const,
		*kind.Minimum, *kind.Maximum, *kind.ExclusiveMinimum, *kind.ExclusiveMaximum, *kind.MultipleOf,
		*kind.MinLength, *kind.MaxLength, *kind.Pattern, *kind.Format,
		*kind.MinItems, *kind.MaxItems, *kind.MinProperties, *kind.MaxProperties:
		c.add(loc, describe(sch), c.gotAt(loc), "")
	default:
		if len(e.Causes) > 0 {
			for _, cause := range e.Causes {
				c.collect(cause)
			}
			return
		}
		c.add(loc, "a valid value", c.gotAt(loc), kindText(k))
	}
}

func (c *collector) missing(loc []string, sch *jsonschema.Schema, name, when string) {
	tokens := append(slices.Clip(loc), name)
	expected := "required property"
	if sch != nil {
		if p, ok := sch.Properties[name]; ok {
			expected += " (" + describe(p) + ")"
		}
	}
	c.add(tokens, expected, "nothing", fmt.Sprintf("required property %q is missing%s", name, when))
}

// typeMismatchAt reports whether e is only a type mismatch at loc.
func typeMismatchAt(e *jsonschema.ValidationError, loc []string) bool {
	switch e.ErrorKind.(type) {
	case *kind.Type:
		return slices.Equal(e.InstanceLocation, loc)
	case *kind.Group, *kind.Reference, *kind.AllOf:
		for _, cause := range e.Causes {
			if typeMismatchAt(cause, loc) {
				return true
			}
		}
	case *kind.FalseSchema:
		return slices.Equal(e.InstanceLocation, loc)
	}
	return false
}

func kindText(k jsonschema.ErrorKind) string {
	return k.LocalizedString(message.NewPrinter(language.English))
}

// closest returns the allowed name nearest to name, if it is near enough
// to be a misspelling (a suggestion only: nothing is renamed).
func closest(name string, allowed []string) string {
	best, bestD := "", 0
	for _, a := range allowed {
		d := EditDistance(strings.ToLower(name), strings.ToLower(a))
		if limit := max(1, min(len(a), len(name))/3); d <= limit && (best == "" || d < bestD) {
			best, bestD = a, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b in characters;
// strings over 64 characters count as entirely different (the sum of their
// lengths), which bounds the work on hostile input.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return len(ra) + len(rb)
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// sortFields orders errors by pointer, comparing array indices as numbers,
// and drops exact duplicates.
func sortFields(fs []FieldError) []FieldError {
	sort.SliceStable(fs, func(i, j int) bool {
		if c := comparePointers(fs[i].Pointer, fs[j].Pointer); c != 0 {
			return c < 0
		}
		if fs[i].Expected != fs[j].Expected {
			return fs[i].Expected < fs[j].Expected
		}
		return fs[i].Message < fs[j].Message
	})
	return slices.Compact(fs)
}

func comparePointers(a, b string) int {
	ta, tb := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(ta) && i < len(tb); i++ {
		if ta[i] == tb[i] {
			continue
		}
		na, ea := strconv.Atoi(ta[i])
		nb, eb := strconv.Atoi(tb[i])
		if ea == nil && eb == nil {
			if na < nb {
				return -1
			}
			return 1
		}
		return strings.Compare(ta[i], tb[i])
	}
	return len(ta) - len(tb)
}

// ValidationError turns field errors into one invalid_arguments error for
// the model: the message names every field, the suggestion says what to
// change, and Details["fields"] holds errs. It returns nil for no errors.
func ValidationError(toolName string, errs []FieldError) *tool.Error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	var add, remove, change []string
	for i, f := range errs {
		msgs[i] = f.Message
		name := label(f.Pointer)
		switch {
		case f.Got == "nothing":
			add = append(add, name)
		case strings.HasPrefix(f.Expected, "no additional properties"):
			remove = append(remove, name)
		default:
			change = append(change, name)
		}
	}
	noun := "field"
	if len(errs) > 1 {
		noun = "fields"
	}
	e := tool.Errorf(tool.InvalidArguments, "the arguments for %q do not match its input schema (%d %s): %s",
		toolName, len(errs), noun, strings.Join(msgs, "; "))
	var todo []string
	if len(add) > 0 {
		todo = append(todo, "add "+strings.Join(add, ", "))
	}
	if len(change) > 0 {
		todo = append(todo, "fix "+strings.Join(change, ", ")+" as expected")
	}
	if len(remove) > 0 {
		todo = append(todo, "remove "+strings.Join(remove, ", "))
	}
	return e.WithSuggestion("call %s again with corrected arguments: %s", toolName, strings.Join(todo, "; ")).
		WithDetail("fields", errs)
}
