// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	internaljson "github.com/modelcontextprotocol/go-sdk/internal/json"
	"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// PATCH(toolgate): readBatch decodes an object as one message without
// trying it as an array first. These tests check that it returns what
// v1.8.0's readBatch (copied below word for word) returns for any input.

func readBatchV180(data []byte) (msgs []jsonrpc.Message, isBatch bool, _ error) {
	// Try to read an array of messages first.
	var rawBatch []json.RawMessage
	if err := internaljson.Unmarshal(data, &rawBatch); err == nil {
		if len(rawBatch) == 0 {
			return nil, true, fmt.Errorf("empty batch")
		}
		for _, raw := range rawBatch {
			msg, err := jsonrpc2.DecodeMessage(raw)
			if err != nil {
				return nil, true, err
			}
			msgs = append(msgs, msg)
		}
		return msgs, true, nil
	}
	// Try again with a single message.
	msg, err := jsonrpc2.DecodeMessage(data)
	return []jsonrpc.Message{msg}, false, err
}

func sameReadBatch(t *testing.T, data []byte) {
	t.Helper()
	msgs, batch, err := readBatch(data)
	wantMsgs, wantBatch, wantErr := readBatchV180(data)
	if batch != wantBatch || fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(msgs, wantMsgs) {
		t.Fatalf("readBatch(%.200q) = %v, %v, %v; v1.8.0: %v, %v, %v", data, msgs, batch, err, wantMsgs, wantBatch, wantErr)
	}
}

var batchInputs = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}`,
	` 	{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	"\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n",
	`{"jsonrpc":"2.0","id":1,"method":"ping"} trailing`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}`,
	`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
	`{"id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"`,
	`{`, `}`, `{}`, `{ }`, `{"a":}`, `{"jsonrpc":"2.0","id":[1],"method":"ping"}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
	` [{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	`[]`, `[ ]`, `[1]`, `[{}]`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[[]]`,
	`null`, ` null`, `true`, `1`, `"x"`, `nul`, ``, ` `, "\t\r\n", `x`, "\xef\xbb\xbf{}", "\x00{}",
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001) + `}`,
	strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001),
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\u00e9\ud83d\ude00\""}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"s\":\"\xff\"}}",
}

func TestReadBatchAsV180(t *testing.T) {
	for _, in := range batchInputs {
		sameReadBatch(t, []byte(in))
	}
	// Every prefix of a few messages: cut anywhere.
	for _, in := range batchInputs[:4] {
		for i := range len(in) + 1 {
			sameReadBatch(t, []byte(in[:i]))
			sameReadBatch(t, []byte(" "+in[i:]))
		}
	}
}

func FuzzReadBatch(f *testing.F) {
	for _, in := range batchInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameReadBatch(t, data) })
}

// BenchmarkReadBatch: one tools/call message, patched and as in v1.8.0.
func BenchmarkReadBatch(b *testing.B) {
	data := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"small.txt"},"_meta":{"progressToken":7}}}`)
	for _, bc := range []struct {
		name string
		read func([]byte) ([]jsonrpc.Message, bool, error)
	}{{"patched", readBatch}, {"v1.8.0", readBatchV180}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := bc.read(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
