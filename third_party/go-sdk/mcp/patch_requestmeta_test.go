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

// noMetaKeyBytes is patch 25's noMetaKey, a loop over bytes.
func noMetaKeyBytes(params []byte) bool {
	for i, c := range params {
		if c >= 0x80 || c == '\\' {
			return false
		}
		if c|0x20 == 'm' && i+4 <= len(params) &&
			params[i+1]|0x20 == 'e' && params[i+2]|0x20 == 't' && params[i+3]|0x20 == 'a' {
			return false
		}
	}
	return true
}

// PATCH(toolgate): patch 37. noMetaKey, 8 bytes at a time, answers as
// patch 25's loop over bytes (whose answers TestExtractRequestMetaNoMetaKey
// checks against v1.8.0's decoding) for: every string of up to 3 bytes of
// an alphabet of what it looks for and near misses (m M e E t T a A and
// letters near them, \ [ ], 0x7f 0x80 0xff 0xdc 0xcd 0xed, @ `); "meta"
// in each case at every offset of strings of 1 to 40 bytes; and 300,000
// random strings of up to 70 bytes of that alphabet. Dropping the word's
// backslash test, its high-bit test, the byte look at a word with an m,
// or the tail loop fails it.
func TestNoMetaKeyWords(t *testing.T) {
	// 0xdc, 0xcd and 0xed are the bytes of 0x80 or more that the word's
	// zero tests, without the high-bit test, would take for none.
	alphabet := []byte("mMeEtTaAlLnNsSuUdDfF`@\\[]\"{}:, x\x7f\x80\xff\xdc\xcd\xed\x0d\x2d\x00")
	check := func(b []byte) {
		t.Helper()
		if got, want := noMetaKey(b), noMetaKeyBytes(b); got != want {
			t.Fatalf("noMetaKey(%q) = %v, the loop over bytes %v", b, got, want)
		}
	}
	var gen func(prefix []byte, n int)
	gen = func(prefix []byte, n int) {
		check(prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			gen(append(prefix[:len(prefix):len(prefix)], c), n-1)
		}
	}
	gen(nil, 3)
	both := 0
	for n := 1; n <= 40; n++ {
		for at := 0; at <= n; at++ {
			for _, m := range []string{"meta", "META", "mEtA", "Meta", "met", "eta", "m\\eta", "me\x80ta"} {
				b := []byte(strings.Repeat("x", n))
				b = append(b[:at:at], append([]byte(m), b[at:]...)...)
				check(b)
				for k := 0; k < len(b); k += 5 {
					c := append([]byte(nil), b...)
					c[k] = '\\'
					check(c)
					c[k] = 0x80
					check(c)
				}
				if !noMetaKey(b) {
					both++
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(37, 2))
	skip := 0
	for i := 0; i < 300000; i++ {
		b := make([]byte, rng.IntN(71))
		for j := range b {
			if rng.IntN(4) == 0 {
				b[j] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[j] = "metaMETA\"{}:,xyz"[rng.IntN(16)]
			}
		}
		check(b)
		if noMetaKey(b) {
			skip++
		}
	}
	if skip < 10000 || both < 1000 {
		t.Fatalf("%d random strings without a _meta, %d with: the cases do not tell the answers apart", skip, both)
	}
}
