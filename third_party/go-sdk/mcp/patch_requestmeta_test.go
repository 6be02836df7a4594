// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// PATCH(toolgate): patch 37. ServerSession.handle takes a request's _meta
// from requestMeta, which tests the params once for a _meta (noMetaKey);
// decodeAhead then extractRequestMeta tested them twice. For every request
// TestDecodeAhead builds, and a gateway's plain tools/call, requestMeta
// gives what the two gave (info, params, whether decoded), and its _meta
// is v1.8.0's extractRequestMeta's, nil for a notification (v1.8.0's
// validateRequestMeta selects nothing for one).
func TestRequestMeta(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 1))
	var methods []string
	for m, info := range serverMethodInfos {
		if info.flags&notification == 0 {
			methods = append(methods, m)
		}
	}
	methods = append(methods, "no/such/method", notificationProgress)
	gateway := json.RawMessage(`{"name":"fs__read_text_file","arguments":{"path":"/tmp/dir/small.txt"}}`)
	ahead, skipped, parsed := 0, 0, 0
	for i := 0; i < 60000; i++ {
		method := methods[rng.IntN(len(methods))]
		if rng.IntN(3) == 0 {
			method = methodCallTool
		}
		params := metaParams(rng)
		if rng.IntN(10) == 0 {
			params = gateway
		}
		req := &jsonrpc.Request{ID: jsonrpc2.Int64ID(1), Method: method, Params: params}
		if method == notificationProgress || rng.IntN(20) == 0 {
			req.ID = jsonrpc.ID{}
		}
		// What handle did before.
		wantInfo, wantParams, wantDecoded := decodeAhead(req)
		var wantMeta Meta
		if wantDecoded {
			wantMeta = paramsMeta(wantParams)
		} else if req.IsCall() {
			wantMeta = extractRequestMeta(req.Params)
		}
		info, got, decoded, meta := requestMeta(req)
		if decoded != wantDecoded || info.flags != wantInfo.flags || !reflect.DeepEqual(got, wantParams) || !reflect.DeepEqual(meta, wantMeta) {
			t.Fatalf("%s params %q: requestMeta %v %#v %#v, before %v %#v %#v", method, req.Params, decoded, got, meta, wantDecoded, wantParams, wantMeta)
		}
		v180 := Meta(nil)
		if req.IsCall() {
			v180 = v180ExtractRequestMeta(req.Params)
		}
		if !reflect.DeepEqual(meta, v180) {
			t.Fatalf("%s params %q: _meta %#v, v1.8.0's %#v", method, req.Params, meta, v180)
		}
		switch {
		case decoded:
			ahead++
		case req.IsCall() && len(req.Params) > 0 && !noMetaKey(req.Params):
			parsed++
		default:
			skipped++
		}
	}
	if ahead < 10000 || skipped < 5000 || parsed < 1000 {
		t.Fatalf("%d decoded ahead, %d skipped, %d parsed: the cases do not tell the ways apart", ahead, skipped, parsed)
	}
}
