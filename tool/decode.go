package tool

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// flatDecoder decodes the common arguments of a typed tool, a flat JSON
// object of strings, numbers and booleans, into a struct of such fields
// without encoding/json's reflection. It gives up (ok false) on anything
// it does not know to decode exactly as encoding/json would: a key that is
// not a field's exact name, an escaped string, a value of another JSON type
// or out of the field's range, or malformed JSON. The caller then decodes
// with encoding/json from scratch, which gives the same value or the error.
type flatDecoder struct {
	fields map[string]flatField
}

// flatField is where a field lies in the struct and what kind it is.
type flatField struct {
	offset uintptr
	kind   reflect.Kind
	bits   int // of a number
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// newFlatDecoder returns a decoder for struct type t, or nil when t has a
// field it does not handle: anything but strings, booleans and numbers, an
// embedded field, a field or type with its own unmarshaling, a ",string"
// option, a name that is not plain, or two fields of one name.
func newFlatDecoder(t reflect.Type) *flatDecoder {
	if t.Kind() != reflect.Struct || custom(t) {
		return nil
	}
	d := &flatDecoder{fields: map[string]flatField{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous || custom(f.Type) {
			return nil
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if opts != "" && opts != "omitempty" && opts != "omitzero" && opts != "omitempty,omitzero" && opts != "omitzero,omitempty" {
			return nil
		}
		if name == "" {
			name = f.Name
		}
		if !plainName(name) {
			return nil
		}
		switch f.Type.Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		default:
			return nil
		}
		if _, dup := d.fields[name]; dup {
			return nil
		}
		ff := flatField{offset: f.Offset, kind: f.Type.Kind()}
		if ff.kind != reflect.String && ff.kind != reflect.Bool {
			ff.bits = f.Type.Bits()
		}
		d.fields[name] = ff
	}
	return d
}

// custom reports whether values of t decode themselves.
func custom(t reflect.Type) bool {
	return t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) ||
		reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)
}

// plainName reports whether name is one encoding/json takes as it is and
// that needs no escaping in JSON.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return name != ""
}

// decode decodes src, a JSON object, into the struct at dst.
func (d *flatDecoder) decode(src []byte, dst unsafe.Pointer) bool {
	i := skipSpace(src, 0)
	if i >= len(src) || src[i] != '{' {
		return false
	}
	i = skipSpace(src, i+1)
	if i < len(src) && src[i] == '}' {
		return skipSpace(src, i+1) == len(src)
	}
	for {
		key, j, ok := plainString(src, i)
		if !ok {
			return false
		}
		f, ok := d.fields[unsafe.String(unsafe.SliceData(key), len(key))]
		if !ok {
			return false
		}
		i = skipSpace(src, j)
		if i >= len(src) || src[i] != ':' {
			return false
		}
		if i, ok = f.set(src, skipSpace(src, i+1), unsafe.Add(dst, f.offset)); !ok {
			return false
		}
		i = skipSpace(src, i)
		if i >= len(src) {
			return false
		}
		switch src[i] {
		case ',':
			i = skipSpace(src, i+1)
		case '}':
			return skipSpace(src, i+1) == len(src)
		default:
			return false
		}
	}
}

// set decodes the value at src[i:] into the field at p and returns the
// offset after it. A null leaves the field as it is, as encoding/json does.
func (f flatField) set(src []byte, i int, p unsafe.Pointer) (int, bool) {
	if len(src)-i >= 4 && string(src[i:i+4]) == "null" {
		return i + 4, true
	}
	switch f.kind {
	case reflect.String:
		s, j, ok := plainString(src, i)
		if ok {
			*(*string)(p) = string(s)
		}
		return j, ok
	case reflect.Bool:
		switch {
		case len(src)-i >= 4 && string(src[i:i+4]) == "true":
			*(*bool)(p) = true
			return i + 4, true
		case len(src)-i >= 5 && string(src[i:i+5]) == "false":
			*(*bool)(p) = false
			return i + 5, true
		}
		return i, false
	}
	j, integer := number(src, i)
	if j == i {
		return i, false
	}
	text := unsafe.String(unsafe.SliceData(src[i:j]), j-i)
	switch f.kind {
	case reflect.Float32, reflect.Float64:
		v, err := strconv.ParseFloat(text, f.bits)
		if err != nil {
			return i, false
		}
		if f.bits == 32 {
			*(*float32)(p) = float32(v)
		} else {
			*(*float64)(p) = v
		}
		return j, true
	}
	if !integer {
		return i, false
	}
	switch f.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v, err := strconv.ParseInt(text, 10, f.bits)
		if err != nil {
			return i, false
		}
		switch f.kind {
		case reflect.Int:
			*(*int)(p) = int(v)
		case reflect.Int8:
			*(*int8)(p) = int8(v)
		case reflect.Int16:
			*(*int16)(p) = int16(v)
		case reflect.Int32:
			*(*int32)(p) = int32(v)
		default:
			*(*int64)(p) = v
		}
	default:
		v, err := strconv.ParseUint(text, 10, f.bits)
		if err != nil {
			return i, false
		}
		switch f.kind {
		case reflect.Uint:
			*(*uint)(p) = uint(v)
		case reflect.Uint8:
			*(*uint8)(p) = uint8(v)
		case reflect.Uint16:
			*(*uint16)(p) = uint16(v)
		case reflect.Uint32:
			*(*uint32)(p) = uint32(v)
		default:
			*(*uint64)(p) = v
		}
	}
	return j, true
}

func skipSpace(src []byte, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
		i++
	}
	return i
}

// plainString returns the contents of the JSON string at src[i:] and the
// offset after it, when it has no escapes, no control characters and is
// valid UTF-8 (so its bytes are its value).
func plainString(src []byte, i int) ([]byte, int, bool) {
	if i >= len(src) || src[i] != '"' {
		return nil, i, false
	}
	ascii := true
	for j := i + 1; j < len(src); j++ {
		switch c := src[j]; {
		case c == '"':
			s := src[i+1 : j]
			return s, j + 1, ascii || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, i, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, i, false
}

// number returns the end of the JSON number at src[i:] (i when there is
// none) and whether it is an integer (no fraction, no exponent).
func number(src []byte, i int) (end int, integer bool) {
	j := i
	if j < len(src) && src[j] == '-' {
		j++
	}
	switch {
	case j < len(src) && src[j] == '0':
		j++
	case j < len(src) && src[j] >= '1' && src[j] <= '9':
		for j < len(src) && src[j] >= '0' && src[j] <= '9' {
			j++
		}
	default:
		return i, false
	}
	integer = true
	if j < len(src) && src[j] == '.' {
		j++
		if j >= len(src) || src[j] < '0' || src[j] > '9' {
			return i, false
		}
		for j < len(src) && src[j] >= '0' && src[j] <= '9' {
			j++
		}
		integer = false
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		j++
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j >= len(src) || src[j] < '0' || src[j] > '9' {
			return i, false
		}
		for j < len(src) && src[j] >= '0' && src[j] <= '9' {
			j++
		}
		integer = false
	}
	return j, integer
}
