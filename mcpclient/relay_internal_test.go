package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRelayable: which upstream results are bytes a gateway may send on,
// as the SDK decoded them (a full gateway: mcpserver's TestRelay).
func TestRelayable(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"content":[{"type":"text","text":"a\n\"b\" \u00e9 \ud7ff"}]}`:                 true,
		` { "content" : null , "isError" : false , "structuredContent" : [ 1 , -0 ] } `: true,
		`{"content":[],"structuredContent":{"a":{"b":[{"c":999999999999999}]},"":""}}`:  true,
		`{}`: true,
		`{"content":[{"type":"text","text":"a"}],"content":[]}`:                      false,
		`{"content":[{"type":"text","text":"a","type":"text"}]}`:                     false,
		`{"structuredContent":{"a":{"b":1,"b":2}}}`:                                  false,
		`{"structuredContent":{"a\u0062":1}}`:                                        false,
		`{"content":[{"type":"text","text":"\uD83D\uDE00"}]}`:                        false,
		`{"content":[{"type":"text","text":"\udfff"}]}`:                              false,
		`{"structuredContent":1000000000000000}`:                                     false,
		`{"structuredContent":1e3}`:                                                  false,
		`{"structuredContent":0.5}`:                                                  false,
		`{"content":[{"type":"text","text":"a","_meta":{}}]}`:                        false,
		`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`:        false,
		`{"content":[],"resultType":"complete"}`:                                     false,
		`{"content":[],"requestState":"x"}`:                                          false,
		`{"content":[],"isError":true}`:                                              false,
		`{"content":[],"Content":[]}`:                                                false,
		`{"content":[{"type":"text","text":"a"}]} `:                                  true,
		`{"content":[{"type":"text","text":"\\"}],"structuredContent":{"k":"\\\""}}`: true,
		`{"content":[{"type":"text","text":"a\\\\\"\ud800"}]}`:                       false,
	} {
		var r mcp.CallToolResult
		if err := r.UnmarshalJSON([]byte(raw)); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		_, compact, got := relayable(r.DecodedJSON(), &r, r.DecodedPlain())
		if got {
			checkCompact(t, r.DecodedJSON(), compact)
		}
		if got != want {
			t.Errorf("relayable(%s) = %v, want %v", raw, got, want)
		}
	}
	// The structured value's bytes, as they stand in the result.
	for raw, want := range map[string]string{
		`{"content":[],"structuredContent": {"a" : [1, "x"]} ,"isError":false}`: `{"a" : [1, "x"]}`,
		`{"structuredContent":"s"}`:                `"s"`,
		`{"structuredContent":null}`:               "",
		`{"content":[{"type":"text","text":"a"}]}`: "",
	} {
		var r mcp.CallToolResult
		if err := r.UnmarshalJSON([]byte(raw)); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if got, _, ok := relayable(r.DecodedJSON(), &r, r.DecodedPlain()); !ok || string(got) != want || (got == nil) != (want == "") {
			t.Errorf("relayable(%s) gave the structured value %q, %v; want %q", raw, got, ok, want)
		}
	}
	// Bytes that are not what the SDK decoded (invalid UTF-8, cut short)
	// are refused, never read past their end.
	var r mcp.CallToolResult
	whole := `{"content":[{"type":"text","text":"a\u0041"}],"structuredContent":{"n":[true,false,null,-12]}}`
	for i := range len(whole) {
		if _, _, ok := relayable([]byte(whole[:i]), &r, false); ok {
			t.Errorf("the first %d bytes were relayable", i)
		}
	}
	if _, _, ok := relayable([]byte("{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}"), &r, false); ok {
		t.Error("invalid UTF-8 was relayable")
	}
}

// relayInputs are results as an upstream may send them: TestRelayable's,
// and strings of every kind (escaped quotes and backslashes at their ends,
// escaped keys, surrogates, UTF-8) as texts, structured values and keys.
func relayInputs() []string {
	in := []string{
		`{"content":[{"type":"text","text":"a\n\"b\" \u00e9 \ud7ff"}]}`, ` { "content" : null , "isError" : false , "structuredContent" : [ 1 , -0 ] } `,
		`{"content":[],"structuredContent":{"a":{"b":[{"c":999999999999999}]},"":""}}`, `{}`, `{"content":[{"type":"text","text":"a"}],"content":[]}`,
		`{"structuredContent":{"a":{"b":1,"b":2}}}`, `{"structuredContent":{"a\u0062":1}}`, `{"structuredContent":1000000000000000}`,
		`{"structuredContent":1e3}`, `{"content":[{"type":"text","text":"\\"}],"structuredContent":{"k":"\\\""}}`,
	}
	strs := []string{`""`, `"a"`, `"\\"`, `"\""`, `"a\\\"b"`, `"\\\\"`, `"line 1\nline 2\n"`, `"\u00e9\u0041"`, `"\ud800"`,
		`"\uD83D\uDE00"`, "\"caf\xc3\xa9\"", `"\/\b\f\r\t"`, `"}],\"k\":{"`}
	for _, a := range strs {
		for _, b := range strs {
			in = append(in,
				`{"content":[{"type":"text","text":`+a+`}],"structuredContent":{"content":`+b+`,`+a+`:[`+b+`,1,true,null,{`+b+`:`+a+`}]}}`,
				`{"structuredContent":{`+a+`:1,`+b+`:2},"content":[{"text":`+b+`,"type":"text"}]}`,
				`{"content":[{"type":"text","text":`+a+`}],"structuredContent":{"content":`+b+`,"k":[`+a+`,{"v":`+b+`}]}}`,
			)
		}
	}
	return in
}

// checkRelayablePlain: on a result the SDK decoded plain, relayable reads
// its bytes as it reads them without knowing that (UTF-8 checked, strings
// read escape by escape): the same verdict and structured bytes.
func checkRelayablePlain(t *testing.T, raw []byte) bool {
	t.Helper()
	var r mcp.CallToolResult
	if r.UnmarshalJSON(raw) != nil || !r.DecodedPlain() {
		return false
	}
	got, compact, ok := relayable(r.DecodedJSON(), &r, true)
	want, wantCompact, wantOK := relayable(r.DecodedJSON(), &r, false)
	if ok != wantOK || string(got) != string(want) || (got == nil) != (want == nil) {
		t.Fatalf("%s: plain %q, %v; read whole %q, %v", raw, got, ok, want, wantOK)
	}
	if ok {
		checkCompact(t, r.DecodedJSON(), compact)
		checkCompact(t, r.DecodedJSON(), wantCompact)
	}
	return ok
}

// checkCompact: relayable's compact is whether encoding/json's Compact
// leaves raw as it is (no white space outside its strings: what the
// go-sdk's isCompact looks for, patch 41).
func checkCompact(t *testing.T, raw []byte, compact bool) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if want := bytes.Equal(buf.Bytes(), raw); compact != want {
		t.Fatalf("relayable(%s): compact %v, want %v", raw, compact, want)
	}
}

// TestRelayablePlain: checkRelayablePlain on relayInputs; most are
// relayable, some not (a key twice or escaped, a number).
func TestRelayablePlain(t *testing.T) {
	plain, ok := 0, 0
	for _, in := range relayInputs() {
		var r mcp.CallToolResult
		if r.UnmarshalJSON([]byte(in)) == nil && r.DecodedPlain() {
			plain++
		}
		if checkRelayablePlain(t, []byte(in)) {
			ok++
		}
	}
	if plain < 300 || ok < 120 || ok == plain {
		t.Errorf("%d decoded plain, %d of them relayable", plain, ok)
	}
}

// FuzzRelayablePlain: checkRelayablePlain on any bytes.
//
//	go test -run '^$' -fuzz FuzzRelayablePlain -fuzztime 60s ./mcpclient/
func FuzzRelayablePlain(f *testing.F) {
	for _, in := range relayInputs() {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkRelayablePlain(t, raw)
	})
}

// BenchmarkRelayTie: what relaying adds on the client side for
// bench/proxy's answer: the scan of its bytes and the record tool.NewRelay
// keeps (mcpserver's BenchmarkAnswer: what it saves).
func BenchmarkRelayTie(b *testing.B) {
	var text strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&text, `line %d of a small file read by the MCP benchmark\n`, i)
	}
	raw := []byte(`{"content":[{"type":"text","text":"` + text.String() + `"}],"structuredContent":{"content":"` + text.String() + `"}}`)
	var r mcp.CallToolResult
	if err := r.UnmarshalJSON(raw); err != nil {
		b.Fatal(err)
	}
	u := &Upstream{}
	b.ReportAllocs()
	for b.Loop() {
		if res := u.result("t", &r); res.Relay == nil {
			b.Fatal("not tied")
		}
	}
}
