// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
)

// v180ExtractRequestMeta is v1.8.0's extractRequestMeta, as it was written
// there.
func v180ExtractRequestMeta(rawParams json.RawMessage) Meta {
	if len(rawParams) == 0 {
		return nil
	}
	var meta struct {
		Meta Meta `json:"_meta"`
	}
	if err := internaljson.Unmarshal(rawParams, &meta); err != nil {
		return nil
	}
	return meta.Meta
}

// PATCH(toolgate): patch 25. extractRequestMeta finds the _meta v1.8.0's
// finds in params of every shape, and skips the decoding for a gateway's
// plain tools/call.
func TestExtractRequestMetaNoMetaKey(t *testing.T) {
	keys := []string{`"_meta"`, `"_META"`, `"_Meta"`, `"meta"`, `"_met"`, `"\u005fmeta"`, `"_m\u0065ta"`, `"_meta "`,
		`"_mеta"`, `"\u00ffmeta"`, `"ſmeta"`, "\"\x7fmeta\"", `"name"`, `"arguments"`, `"progressToken"`, `"x"`, `"é"`}
	vals := []string{`{}`, `null`, `{"progressToken":"t-1"}`, `{"progressToken":7,"k":[1,"META"]}`, `"s"`, `1`, `[1]`,
		`{"a":{"_meta":{"b":1}}}`, `"_meta"`, `"a\"b"`, `"é"`, `{"_meta":{}}`, `tru`}
	pieces := []string{"", " ", ",", "{", "}", "[", "]", ":", "\n", "x", "\\"}
	rng := rand.New(rand.NewPCG(3, 4))
	fast, found := 0, 0
	for i := 0; i < 50000; i++ {
		var b strings.Builder
		switch rng.IntN(8) {
		case 0: // anything
			for j := rng.IntN(12); j > 0; j-- {
				switch rng.IntN(3) {
				case 0:
					b.WriteString(keys[rng.IntN(len(keys))])
				case 1:
					b.WriteString(vals[rng.IntN(len(vals))])
				default:
					b.WriteString(pieces[rng.IntN(len(pieces))])
				}
			}
		default: // an object, maybe cut or followed by something
			b.WriteString("{")
			for j := rng.IntN(4); j > 0; j-- {
				b.WriteString(keys[rng.IntN(len(keys))] + ":" + vals[rng.IntN(len(vals))])
				if j > 1 {
					b.WriteString(",")
				}
			}
			b.WriteString("}")
			if rng.IntN(6) == 0 {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
		}
		params := json.RawMessage(b.String())
		if rng.IntN(4) == 0 {
			params = params[:rng.IntN(len(params)+1)]
		}
		got, want := extractRequestMeta(params), v180ExtractRequestMeta(params)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("params %q: _meta %#v, v1.8.0's %#v", params, got, want)
		}
		if noMetaKey(params) {
			fast++
		}
		if want != nil {
			found++
		}
	}
	if fast < 1000 || found < 1000 {
		t.Fatalf("%d of the params skipped the decoding, %d had a _meta: the cases do not tell the two apart", fast, found)
	}
	gateway := json.RawMessage(`{"name":"bare__read_text_file","arguments":{"path":"/tmp/dir/small.txt"}}`)
	if !noMetaKey(gateway) || extractRequestMeta(gateway) != nil {
		t.Fatalf("a gateway's tools/call without _meta is decoded")
	}
}
