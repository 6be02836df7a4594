package schema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxRender is how many characters of a value a message quotes.
const maxRender = 40

// short renders v as compact JSON, cut to maxRender characters.
func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return truncate(string(b), maxRender)
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// got renders a value as "type value", e.g. `string "abc"`, `integer 0`.
func got(v any) string {
	if v == nil {
		return "null"
	}
	return jsonKind(v) + " " + short(v)
}

// pointer renders instance location tokens as a JSON pointer ("" is the root).
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}

func escapeToken(t string) string {
	if !strings.ContainsAny(t, "~/") {
		return t
	}
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// at returns the value at tokens inside v.
func at(v any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[t]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// describe says in a few words what a schema node accepts, e.g.
// "integer ≥ 1", `one of ["a","b"]`, "string of at most 10 characters".
func describe(s *jsonschema.Schema) string {
	return describeDepth(s, 0)
}

func describeDepth(s *jsonschema.Schema, depth int) string {
	if s == nil || depth > 3 {
		return "a value"
	}
	if s.Bool != nil {
		if *s.Bool {
			return "any value"
		}
		return "nothing (no value is allowed here)"
	}
	if s.Const != nil {
		return "exactly " + short(*s.Const)
	}
	if s.Enum != nil {
		return "one of " + truncate(enumList(s.Enum.Values), 120)
	}
	var head string
	if s.Types != nil {
		head = strings.Join(s.Types.ToStrings(), " or ")
	} else if s.Ref != nil {
		return describeDepth(s.Ref, depth+1)
	} else if len(s.AnyOf) > 0 || len(s.OneOf) > 0 {
		alts := s.AnyOf
		if len(alts) == 0 {
			alts = s.OneOf
		}
		parts := make([]string, len(alts))
		for i, a := range alts {
			parts[i] = describeDepth(a, depth+1)
		}
		return "one of: " + strings.Join(parts, " | ")
	} else {
		head = "a value"
	}
	var parts []string
	num := func(op string, r *big.Rat) {
		if r != nil {
			parts = append(parts, op+" "+ratString(r))
		}
	}
	num("≥", s.Minimum)
	num(">", s.ExclusiveMinimum)
	num("≤", s.Maximum)
	num("<", s.ExclusiveMaximum)
	if s.MultipleOf != nil {
		parts = append(parts, "a multiple of "+ratString(s.MultipleOf))
	}
	if s.MinLength != nil {
		parts = append(parts, "at least "+count(*s.MinLength, "character"))
	}
	if s.MaxLength != nil {
		parts = append(parts, "at most "+count(*s.MaxLength, "character"))
	}
	if s.Pattern != nil {
		parts = append(parts, "matching "+truncate(s.Pattern.String(), 60))
	}
	if s.Format != nil {
		parts = append(parts, "in format "+s.Format.Name)
	}
	if s.MinItems != nil {
		parts = append(parts, "at least "+count(*s.MinItems, "item"))
	}
	if s.MaxItems != nil {
		parts = append(parts, "at most "+count(*s.MaxItems, "item"))
	}
	if s.UniqueItems {
		parts = append(parts, "unique items")
	}
	if it := s.Items2020; it != nil && it.Types != nil {
		head += " of " + strings.Join(it.Types.ToStrings(), " or ")
	} else if it, ok := s.Items.(*jsonschema.Schema); ok && it.Types != nil {
		head += " of " + strings.Join(it.Types.ToStrings(), " or ")
	}
	if s.MinProperties != nil {
		parts = append(parts, "at least "+count(*s.MinProperties, "property"))
	}
	if s.MaxProperties != nil {
		parts = append(parts, "at most "+count(*s.MaxProperties, "property"))
	}
	if len(parts) == 0 {
		return head
	}
	sep := " "
	if len(parts) > 0 && !strings.HasPrefix(parts[0], "≥") && !strings.HasPrefix(parts[0], ">") &&
		!strings.HasPrefix(parts[0], "≤") && !strings.HasPrefix(parts[0], "<") {
		sep = " with "
		if strings.HasPrefix(parts[0], "matching") || strings.HasPrefix(parts[0], "in format") || strings.HasPrefix(parts[0], "a multiple") {
			sep = " "
		}
	}
	return head + sep + strings.Join(parts, ", ")
}

// count renders "1 item", "2 items", "3 properties".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return strconv.Itoa(n) + " " + noun[:len(noun)-1] + "ies"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func enumList(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = short(v)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
