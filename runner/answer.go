package runner

import (
	"slices"
	"strconv"

	"github.com/toolgate/toolgate/tool"
)

// flatLine is the answer line of a result of the common shape, byte for
// byte as json.Marshal(Answer{Result: NewResult(r)}) writes it: content
// blocks without data, no structured value, no error, metadata of
// strings, booleans and integers (a file's lines, a listing's counts).
// Each string is written by tool.AppendJSONString, without encoding/json's
// reflection over each value and its sorted copy of a map's keys. ok is
// false for any other result, which json.Marshal encodes.
func flatLine(r tool.Result) (line []byte, ok bool) {
	if r.Structured != nil || r.Error != nil {
		return nil, false
	}
	size := 32
	for _, c := range r.Content {
		if len(c.Data) > 0 {
			return nil, false
		}
		size += len(c.Type) + len(c.Text) + len(c.MIMEType) + len(c.URI) + 64
	}
	keys := make([]string, 0, len(r.Meta))
	for k, v := range r.Meta {
		switch v.(type) {
		case string, bool, int, int64:
		default:
			return nil, false
		}
		keys = append(keys, k)
		size += len(k) + 32
	}
	slices.Sort(keys)
	b := make([]byte, 0, size)
	b = append(b, `{"result":{`...)
	if len(r.Content) > 0 {
		b = append(b, `"content":[`...)
		for i, c := range r.Content {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = tool.AppendJSONString(b, c.Type)
			for _, f := range [...]struct{ name, v string }{{`,"text":`, c.Text}, {`,"mime_type":`, c.MIMEType}, {`,"uri":`, c.URI}} {
				if f.v != "" {
					b = tool.AppendJSONString(append(b, f.name...), f.v)
				}
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(r.Meta) > 0 {
		if len(r.Content) > 0 {
			b = append(b, ',')
		}
		b = append(b, `"meta":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(tool.AppendJSONString(b, k), ':')
			switch v := r.Meta[k].(type) {
			case string:
				b = tool.AppendJSONString(b, v)
			case bool:
				b = strconv.AppendBool(b, v)
			case int:
				b = strconv.AppendInt(b, int64(v), 10)
			case int64:
				b = strconv.AppendInt(b, v, 10)
			}
		}
		b = append(b, '}')
	}
	return append(b, "}}"...), true
}
