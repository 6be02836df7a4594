// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// v180UnmarshalCallToolParams is v1.8.0's newMethodInfo unmarshalParams for
// tools/call (P *CallToolParamsRaw, no missingParamsOK), as it was written
// there (the MCPGODEBUG branch left out).
func v180UnmarshalCallToolParams(m json.RawMessage) (Params, error) {
	var p *CallToolParamsRaw
	if m != nil {
		if err := internaljson.Unmarshal(m, &p); err != nil {
			return nil, fmt.Errorf("%w: unmarshaling %q into a %T: %w", jsonrpc2.ErrInvalidParams, m, p, err)
		}
	}
	if p == nil {
		return nil, fmt.Errorf("%w: missing required \"params\"", jsonrpc2.ErrInvalidRequest)
	}
	return orZero[Params](p), nil
}

// v180ValidateRequestMeta is v1.8.0's validateRequestMeta, as it was
// written there (its extractRequestMeta is v180ExtractRequestMeta).
func v180ValidateRequestMeta(req *jsonrpc.Request) (*validatedMeta, error) {
	if !req.IsCall() {
		return &validatedMeta{usesNewProtocol: false, initializeParams: nil}, nil
	}
	meta := v180ExtractRequestMeta(req.Params)
	if meta == nil {
		return &validatedMeta{usesNewProtocol: false, initializeParams: nil}, nil
	}
	protocolVersion, ok := meta[MetaKeyProtocolVersion].(string)
	if !ok || protocolVersion < protocolVersion20260728 {
		return &validatedMeta{usesNewProtocol: false, initializeParams: nil}, nil
	}
	var clientInfo *Implementation
	if _, present := meta[MetaKeyClientInfo]; present {
		var ok bool
		clientInfo, ok = v180DecodeMetaValue[*Implementation](meta, MetaKeyClientInfo)
		if !ok {
			return nil, &jsonrpc.Error{
				Code:    jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("invalid _meta field %q", MetaKeyClientInfo),
			}
		}
	}
	capabilities, ok := v180DecodeMetaValue[*clientCapabilitiesV2](meta, MetaKeyClientCapabilities)
	if !ok {
		return nil, &jsonrpc.Error{
			Code:    jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("missing or invalid _meta field %q", MetaKeyClientCapabilities),
		}
	}
	logLevel, _ := v180DecodeMetaValue[LoggingLevel](meta, MetaKeyLogLevel)
	return &validatedMeta{usesNewProtocol: true, initializeParams: &InitializeParams{
		ProtocolVersion: protocolVersion,
		Capabilities:    capabilities.toV1(),
		ClientInfo:      clientInfo,
	}, logLevel: logLevel}, nil
}

// v180DecodeMetaValue is v1.8.0's decodeMetaValue, as it was written there.
func v180DecodeMetaValue[T any](m map[string]any, key string) (T, bool) {
	var zero T
	raw, ok := m[key]
	if !ok || raw == nil {
		return zero, false
	}
	if v, ok := raw.(T); ok {
		return v, true
	}
	var v T
	if err := v180Remarshal(raw, &v); err != nil {
		return zero, false
	}
	return v, true
}

// v180Remarshal is v1.8.0's remarshal, as it was written there.
func v180Remarshal(from, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return internaljson.Unmarshal(data, to)
}

// metaParams builds random params of the shapes a server is sent: tools/call
// params with the SEP-2575 triple, valid or not, and everything around it
// that could make a decoder tell them apart.
func metaParams(rng *rand.Rand) json.RawMessage {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	deep := strings.Repeat("[", 70) + strings.Repeat("]", 70)
	value := func() string {
		return pick(`1`, `-0`, `2.5e3`, `1e400`, `"s"`, `"é"`, `"\u00e9\n"`, `"\ud800"`, "\"\xff\"", `null`, `true`, `[]`, `{}`,
			`[1,"a",{"b":null}]`, `{"k":{"l":[false]}}`, deep, `{"a":1,"a":2}`)
	}
	member := func() string {
		switch rng.IntN(12) {
		case 0, 1, 2:
			return `"` + MetaKeyProtocolVersion + `":` + pick(`"2026-07-28"`, `"2026-07-28"`, `"2025-06-18"`, `"2099-01-01"`, `5`, `null`, `""`)
		case 3, 4:
			return `"` + MetaKeyClientInfo + `":` + pick(`{"name":"drv","version":"1"}`, `{"name":"drv","version":"1"}`, `{"name":5}`,
				`null`, `"s"`, `{"name":"a","name":"b"}`, `{"name":"a","icons":[{"src":"x","sizes":["1x1"]}]}`, `{}`,
				`{"Name":"n","version":"\u00e9"}`, `{"name":"x","title":null}`, `[1]`)
		case 5, 6, 7:
			return `"` + MetaKeyClientCapabilities + `":` + pick(`{"roots":{"listChanged":true}}`, `{"roots":{"listChanged":true}}`, `{}`, `null`, `5`,
				`{"roots":{"listChanged":"x"}}`, `{"sampling":{},"experimental":{"a":[1,2.5,-0,1e5]}}`, `{"elicitation":{"form":{}}}`,
				`{"roots":{"listChanged":true},"roots":{}}`, `{"roots":null}`, `{"extensions":{"x":{"y":"z"}}}`, `{"roots":[]}`)
		case 8:
			return `"` + MetaKeyLogLevel + `":` + pick(`"debug"`, `"warning"`, `5`, `null`, `"nonsense"`)
		case 9:
			return pick(`"progressToken"`, `"toolgate/conversation"`, `"x"`, `"\u005fmeta"`, `"io.modelcontextprotocol/protocolVersion "`, "\"a\x01\"", "\"\x1f\"") + ":" + value()
		default:
			return `"` + pick("a", "b", "c") + `":` + value()
		}
	}
	object := func(members func() string, n int) string {
		var b strings.Builder
		b.WriteString(pick("{", "{", " { "))
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteString(pick(",", ", ", "\n,"))
			}
			b.WriteString(members())
		}
		b.WriteString(pick("}", "}", " } "))
		return b.String()
	}
	meta := func() string {
		if rng.IntN(8) == 0 {
			return value()
		}
		return object(member, rng.IntN(7))
	}
	top := func() string {
		switch rng.IntN(9) {
		case 0, 1, 2:
			return `"_meta":` + meta()
		case 3, 4:
			return `"name":` + pick(`"fs__read_text_file"`, `"t"`, `""`, `5`, `null`, `"\u0074"`, "\"\xff\"")
		case 5, 6:
			return `"arguments":` + pick(`{"path":"/tmp/x"}`, `{}`, `null`, `[1,2]`, `"s"`, ` { "a" : 1 } `, `{"a":tru}`) + value()[:0]
		case 7:
			return pick(`"_META"`, `"Name"`, `"inputResponses"`, `"requestState"`, `"\u005fmeta"`, `"_meta "`, `"arguments"`, `"x"`, "\"a\x01\"", "\"\t\"") + ":" + value()
		default:
			return `"_meta":` + meta()
		}
	}
	var s string
	switch rng.IntN(10) {
	case 0:
		s = pick(`null`, `[]`, `"s"`, `1`, ``, ` `, `{}`, `{"_meta":null}`, `{"_meta":{}}`)
	default:
		s = object(top, rng.IntN(5))
	}
	if rng.IntN(10) == 0 {
		s += pick(" ", "x", "}", "{}")
	}
	if rng.IntN(10) == 0 && len(s) > 0 {
		s = s[:rng.IntN(len(s))]
	}
	return json.RawMessage(s)
}

// PATCH(toolgate): patch 26. A tools/call's params decode as v1.8.0's
// decoder decodes them (the same params, the same error), whether or not
// the plain decoder takes them.
func TestCallToolParamsPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 1))
	unmarshal := serverMethodInfos[methodCallTool].unmarshalParams
	plain, failed := 0, 0
	for i := 0; i < 50000; i++ {
		params := metaParams(rng)
		got, err := unmarshal(params)
		want, wantErr := v180UnmarshalCallToolParams(params)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("params %q: %#v, %v; v1.8.0: %#v, %v", params, got, err, want, wantErr)
		}
		if err != nil {
			failed++
		}
		if new(CallToolParamsRaw).UnmarshalPlainJSON(params) {
			plain++
		}
	}
	if plain < 5000 || failed < 1000 {
		t.Fatalf("%d params decoded plain, %d failed: the cases do not tell the two apart", plain, failed)
	}
	gateway := json.RawMessage(`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"drv","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},` +
		`"name":"fs__read_text_file","arguments":{"path":"/tmp/dir/small.txt"}}`)
	if !new(CallToolParamsRaw).UnmarshalPlainJSON(gateway) {
		t.Fatalf("a v1.8.0 client's tools/call is not decoded plain")
	}
}

// PATCH(toolgate): patch 26. A triple sent again is decoded from the
// memo: to the same values as v1.8.0's, fresh ones unless shared, and the
// values the memo holds are never changed by what the caller does to them.
func TestMetaMemo(t *testing.T) {
	params := json.RawMessage(`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"experimental":{"a":[1,-0,"x",null,{}]}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"drv","version":"1","icons":[{"src":"i","sizes":["1x1"]}]},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"t"}`)
	req := &jsonrpc.Request{ID: jsonrpc2.Int64ID(1), Method: methodCallTool, Params: params}
	want, _ := v180ValidateRequestMeta(req)
	var memo metaMemo
	last := &validatedMeta{initializeParams: &InitializeParams{}}
	for i, shared := range []bool{false, false, true, true, false, true} {
		got, err := validateMeta(extractRequestMeta(params), &memo, shared)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("call %d (shared %v): %#v, %v; v1.8.0: %#v", i, shared, got, err, want)
		}
		e := memo.slots[0].Load()
		if memos := e != nil && got.initializeParams.ClientInfo == e.v; memos != shared || got.initializeParams.ClientInfo == last.initializeParams.ClientInfo && !shared {
			t.Fatalf("call %d (shared %v): the memo's value %v", i, shared, memos)
		}
		if !shared {
			got.initializeParams.ClientInfo.Name = "changed" // a session's to change
			got.initializeParams.Capabilities.Experimental["a"] = nil
		}
		last = got
	}
	if e := memo.slots[0].Load(); e == nil || e.v == nil || e.v.(*Implementation).Name != "drv" {
		t.Fatalf("the memo holds %#v", e)
	}
	// A different value is encoded again and remembered.
	other := json.RawMessage(strings.Replace(string(params), `"version":"1"`, `"version":"2"`, 1))
	got, err := validateMeta(extractRequestMeta(other), &memo, true)
	if e := memo.slots[0].Load(); err != nil || e.tree != nil || e.v != nil {
		t.Fatalf("a clientInfo seen once: %#v, %v; the memo holds %#v", got, err, e)
	}
	got, err = validateMeta(extractRequestMeta(other), &memo, true)
	if err != nil || got.initializeParams.ClientInfo.Version != "2" || memo.slots[0].Load().tree.(map[string]any)["version"] != "2" {
		t.Fatalf("another clientInfo: %#v, %v", got, err)
	}
	// -0 and 0 encode differently: not the same value.
	if sameTree(map[string]any{"a": math.Copysign(0, -1)}, map[string]any{"a": 0.0}) || !sameTree([]any{nil, "x", true}, []any{nil, "x", true}) {
		t.Fatalf("sameTree")
	}
}

// PATCH(toolgate): patch 26. For every standard method, a call's params
// decoded ahead (decodeAhead) hold the _meta v1.8.0's extractRequestMeta
// parses out of them, and the check of that _meta (validateMeta) says what
// v1.8.0's validateRequestMeta says: the same result, the same error.
func TestDecodeAhead(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 2))
	var methods []string
	for m, info := range serverMethodInfos {
		if info.flags&notification == 0 {
			methods = append(methods, m)
		}
	}
	methods = append(methods, "no/such/method", notificationProgress)
	var memo metaMemo
	ahead, newProtocol, failed := 0, 0, 0
	for i := 0; i < 60000; i++ {
		method := methods[rng.IntN(len(methods))]
		if rng.IntN(3) == 0 {
			method = methodCallTool
		}
		req := &jsonrpc.Request{ID: jsonrpc2.Int64ID(1), Method: method, Params: metaParams(rng)}
		shared := rng.IntN(2) == 0
		if method == notificationProgress || rng.IntN(20) == 0 {
			req.ID = jsonrpc.ID{}
		}
		want, wantErr := v180ValidateRequestMeta(req)
		var got *validatedMeta
		var err error
		info, params, decoded := decodeAhead(req)
		if decoded {
			ahead++
			if meta, want := paramsMeta(params), v180ExtractRequestMeta(req.Params); !reflect.DeepEqual(meta, want) {
				t.Fatalf("%s params %q: _meta %#v, v1.8.0's %#v", method, req.Params, meta, want)
			}
			again, againErr := serverMethodInfos[method].unmarshalParams(req.Params)
			if againErr != nil || !reflect.DeepEqual(params, again) || info.flags != serverMethodInfos[method].flags {
				t.Fatalf("%s params %q: decoded ahead as %#v, by handleReceive as %#v, %v", method, req.Params, params, again, againErr)
			}
			got, err = validateMeta(paramsMeta(params), &memo, shared)
		} else if req.IsCall() {
			got, err = validateMeta(extractRequestMeta(req.Params), &memo, shared)
		} else {
			got, err = validateRequestMeta(req)
		}
		if !reflect.DeepEqual(err, wantErr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s params %q (ahead %v): %#v, %v; v1.8.0: %#v, %v", method, req.Params, decoded, got, err, want, wantErr)
		}
		if wantErr != nil {
			failed++
		} else if want.usesNewProtocol {
			newProtocol++
		}
	}
	if ahead < 10000 || newProtocol < 1000 || failed < 1000 {
		t.Fatalf("%d decoded ahead, %d in the new protocol, %d refused: the cases do not tell the ways apart", ahead, newProtocol, failed)
	}
}

// PATCH(toolgate): patch 26. metaProtocolVersion finds the protocolVersion
// v1.8.0's HTTP transports found in the _meta they parsed, in params of
// every shape.
func TestMetaProtocolVersion(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 3))
	plain, found := 0, 0
	for i := 0; i < 60000; i++ {
		params := metaParams(rng)
		want, _ := v180ExtractRequestMeta(params)[MetaKeyProtocolVersion].(string)
		if got := metaProtocolVersion(params); got != want {
			t.Fatalf("params %q: protocolVersion %q, v1.8.0's %q", params, got, want)
		}
		if _, ok := plainProtocolVersion(bytes.Trim(params, " \t\r\n")); ok {
			plain++
		}
		if want != "" {
			found++
		}
	}
	if plain < 5000 || found < 5000 {
		t.Fatalf("%d params scanned plain, %d with a protocolVersion: the cases do not tell the two apart", plain, found)
	}
	gateway := json.RawMessage(`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"drv","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},` +
		`"name":"fs__read_text_file","arguments":{"path":"/tmp/x","n":5}}`)
	if v, ok := plainProtocolVersion(gateway); !ok || v != "2026-07-28" {
		t.Fatalf("a v1.8.0 client's tools/call: %q, %v", v, ok)
	}
}

// PATCH(toolgate): patch 26. validateMeta on the _meta of two clients
// calling in turn (clientInfo and clientCapabilities differ: the memo
// misses every call), on one client's (the memo hits), and without a memo
// (v1.8.0's decoding), for a session initialized (shared) or not:
//
//	go test -run XXX -bench BenchmarkValidateMeta -benchmem ./mcp/
func BenchmarkValidateMeta(b *testing.B) {
	triple := func(name, caps string) Meta {
		params := json.RawMessage(`{"_meta":{"io.modelcontextprotocol/clientCapabilities":` + caps + `,` +
			`"io.modelcontextprotocol/clientInfo":{"name":"` + name + `","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"t"}`)
		return extractRequestMeta(params)
	}
	a := triple("a", `{"roots":{"listChanged":true}}`)
	c := triple("c", `{"roots":{"listChanged":true},"sampling":{}}`)
	for _, bc := range []struct {
		name  string
		metas []Meta
		memo  bool
	}{
		{"alternating", []Meta{a, c}, true},
		{"same", []Meta{a}, true},
		{"nomemo", []Meta{a, c}, false},
	} {
		for _, shared := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/shared=%v", bc.name, shared), func(b *testing.B) {
				var memo *metaMemo
				if bc.memo {
					memo = new(metaMemo)
				}
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := validateMeta(bc.metas[i%len(bc.metas)], memo, shared); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// PATCH(toolgate): patch 26. A session's state is never given the memo's
// values: a session not yet initialized stores the triple of its first
// call (validateMeta's fresh values), and an initialized one, given the
// memo's (shared), stores nothing.
func TestMetaMemoNotInState(t *testing.T) {
	ctx := context.Background()
	s := NewServer(&Implementation{Name: "s", Version: "1"}, nil)
	AddTool(s, &Tool{Name: "t"}, func(context.Context, *CallToolRequest, map[string]any) (*CallToolResult, any, error) {
		return &CallToolResult{}, nil, nil
	})
	triple := json.RawMessage(`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"t"}`)
	var sessions []*ServerSession
	for k := range 2 {
		ct, st := NewInMemoryTransports()
		ss, err := s.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		sessions = append(sessions, ss)
		conn, err := ct.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for n := range 3 {
			id := jsonrpc2.Int64ID(int64(10*k + n))
			if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: methodCallTool, Params: triple}); err != nil {
				t.Fatal(err)
			}
			msg, err := conn.Read(ctx)
			if r, ok := msg.(*jsonrpc.Response); err != nil || !ok || r.Error != nil || r.ID != id {
				t.Fatalf("session %d call %d: %#v, %v", k, n, msg, err)
			}
		}
	}
	info, caps := s.metaMemo.slots[0].Load(), s.metaMemo.slots[1].Load()
	if info == nil || info.v == nil || caps == nil || caps.v == nil {
		t.Fatalf("the memo holds no shared value: %#v, %#v", info, caps)
	}
	for i, ss := range sessions {
		st := ss.state.InitializeParams
		if st == nil || st.ClientInfo == nil || st.Capabilities == nil {
			t.Fatalf("session %d: state %#v", i, st)
		}
		if any(st.ClientInfo) == info.v {
			t.Errorf("session %d: the state's clientInfo is the memo's", i)
		}
		if v2 := caps.v.(*clientCapabilitiesV2); v2.Roots != nil && st.Capabilities.RootsV2 == v2.Roots {
			t.Errorf("session %d: the state's capabilities share the memo's", i)
		}
	}
}
