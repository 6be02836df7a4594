package tool

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// marshalFlat returns json.Marshal(v) for a flat struct (or a pointer to
// one): exported fields of strings, booleans, integers and pointers to
// them, named by their own names or plain `json` tags (see plainName),
// with no option but omitempty, no name twice, nothing
// embedded, no type with a method of its own to encode itself (by value or
// pointer receiver) and no json.Number, which encoding/json writes as a
// number and refuses when invalid. It writes
// the fields as encoding/json does, in their order, without its reflection
// over each value's encoder and its byte-at-a-time string encoding
// (AppendJSONString): a process tool's answer, 8 KiB of output in a struct,
// is the case it is for. It reports false for anything else, which
// json.Marshal then encodes. With a view, it also fills in what the bytes
// say (see flatView), in the same pass over the fields.
func marshalFlat(v any, view *flatView) ([]byte, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, false
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil, false
	}
	fields := outFieldsOf(rv.Type())
	if len(fields) == 0 {
		return nil, false
	}
	size := 2
	for _, f := range fields {
		size += len(f.key) + 24
		if f.kind == reflect.String && !f.ptr {
			size += rv.Field(f.index).Len() * 9 / 8
		}
	}
	b := make([]byte, 1, size)
	b[0] = '{'
	if view != nil {
		view.val = make(map[string]any, len(fields))
	}
	for _, f := range fields {
		fv := rv.Field(f.index)
		if f.ptr {
			if fv.IsNil() {
				if f.omitEmpty {
					continue
				}
				if len(b) > 1 {
					b = append(b, ',')
				}
				b = append(b, f.key...)
				b = append(b, "null"...)
				if view != nil {
					view.val[f.name()] = nil
				}
				continue
			}
			fv = fv.Elem()
		} else if f.omitEmpty && fv.IsZero() {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, f.key...)
		var val any
		switch f.kind {
		case reflect.String:
			s, start := fv.String(), len(b)
			b = AppendJSONString(b, s)
			if view != nil {
				val = decodedString(s)
				view.strs = append(view.strs, flatString{s, start, len(b)})
			}
		case reflect.Bool:
			b = strconv.AppendBool(b, fv.Bool())
			val = fv.Bool()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			b = strconv.AppendInt(b, fv.Int(), 10)
			val = float64(fv.Int()) // rounded to even, as ParseFloat of its digits is
		default:
			b = strconv.AppendUint(b, fv.Uint(), 10)
			val = float64(fv.Uint())
		}
		if view != nil {
			view.val[f.name()] = val
		}
	}
	return append(b, '}'), true
}

// flatView is what the bytes marshalFlat writes say: val is the value
// json.Unmarshal decodes them into (an any: a map of the fields written,
// numbers as float64, strings with each byte of invalid UTF-8 as U+FFFD),
// and strs the strings written, each with where its encoding lies in the
// bytes.
type flatView struct {
	val  map[string]any
	strs []flatString
}

// flatString is a string field's value and the bytes [start, end) that
// encode it.
type flatString struct {
	s          string
	start, end int
}

// decodedString is s as json.Unmarshal reads back its encoding: s itself
// when it is valid UTF-8, else s with each byte that is not part of a
// valid character replaced by U+FFFD (as AppendJSONString writes it).
func decodedString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// outField is one field marshalFlat writes (flatField is one the
// decoder reads).
type outField struct {
	index     int
	key       string // `"name":`
	kind      reflect.Kind
	ptr       bool
	omitEmpty bool
}

// name is the field's JSON name (a plain one: its key holds it as it is).
func (f outField) name() string { return f.key[1 : len(f.key)-2] }

// flatTypes holds each struct type's fields for marshalFlat (nil: not
// flat).
var flatTypes sync.Map // reflect.Type -> []outField

func outFieldsOf(t reflect.Type) []outField {
	if f, ok := flatTypes.Load(t); ok {
		return f.([]outField)
	}
	f := outFields(t)
	flatTypes.Store(t, f)
	return f
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	numberType        = reflect.TypeFor[json.Number]()
)

// ownEncoding reports whether t, or a pointer to it, encodes itself, or
// encoding/json has its own encoding for it (json.Number).
func ownEncoding(t reflect.Type) bool {
	if t == numberType {
		return true
	}
	for _, t := range []reflect.Type{t, reflect.PointerTo(t)} {
		if t.Implements(marshalerType) || t.Implements(textMarshalerType) {
			return true
		}
	}
	return false
}

// outFields is t's fields as marshalFlat writes them, or nil when t is not
// a flat struct (or has no field to write).
func outFields(t reflect.Type) []outField {
	if ownEncoding(t) {
		return nil
	}
	var fields []outField
	seen := map[string]bool{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		if !plainName(name) || seen[name] || (opts != "" && opts != "omitempty") {
			return nil
		}
		seen[name] = true
		f := outField{index: i, key: `"` + name + `":`, omitEmpty: opts == "omitempty"}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			f.ptr, ft = true, ft.Elem()
		}
		if ownEncoding(ft) { // of the pointer too: it asks *ft
			return nil
		}
		switch f.kind = ft.Kind(); f.kind {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			return nil
		}
		fields = append(fields, f)
	}
	return fields
}
