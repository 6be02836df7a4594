// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// PATCH(toolgate): patch 41. RelayCompactJSON is RelayJSON of data its
// caller knows to be compact; the session then does not run isCompact on
// the frame. These tests check that the session writes the same bytes as
// for RelayJSON (patch 6's answer, which TestRelayJSON checks against
// v1.8.0's encoding), with and without a head in front (the protocols of
// 2025-06-18, 2025-11-25 and 2026-07-28), and that RelayJSON and
// RelayJSONRoom after it are checked again.

// TestRelayCompactJSONWire: each compact relay, answered through
// RelayCompactJSON and through RelayJSON, is the same response line on
// the wire, for every protocol version.
func TestRelayCompactJSONWire(t *testing.T) {
	relays := []string{
		`{"content":[{"type":"text","text":"relayed <&>\u2028 a b\n"}],"structuredContent":{"n":1,"s":["a",null,true]}}`,
		`{"content":[{"type":"text","text":"x"}]}`,
		`{"content":[],"isError":false}`,
		`{"content":[{"type":"text","text":"\" ,\\"}],"structuredContent":{"k":"{ \"v\" : 1 }"}}`,
		`{}`,
	}
	for _, version := range []string{protocolVersion20250618, protocolVersion20251125, protocolVersion20260728} {
		for i, relay := range relays {
			if !isCompact([]byte(relay)) {
				t.Fatalf("relay %d is not compact", i)
			}
			lines := relayCompactLines(t, version, relay)
			if len(lines) != 2 || !bytes.Equal(lines[0], lines[1]) {
				t.Errorf("%s, relay %d: RelayCompactJSON answered %s\nRelayJSON %s", version, i, lines[0], lines[1])
			}
			if testing.Verbose() && i == 0 {
				t.Logf("%s: %s", version, lines[0])
			}
			if !bytes.Contains(lines[0], []byte(relay[1:])) {
				t.Errorf("%s, relay %d: the answer %s does not carry the relayed bytes", version, i, lines[0])
			}
		}
	}
}

// relayCompactLines serves a tool answering relay through
// RelayCompactJSON and one through RelayJSON over a pipe, and returns the
// response lines of a call of each (the same id), read as a client that
// speaks version reads them.
func relayCompactLines(t *testing.T, version, relay string) [][]byte {
	t.Helper()
	server := NewServer(&Implementation{Name: "test", Version: "v1"}, nil)
	var fields CallToolResult
	if err := fields.UnmarshalJSON([]byte(relay)); err != nil {
		t.Fatal(err)
	}
	fields.decoded, fields.plain = nil, false
	for name, compact := range map[string]bool{"compact": true, "relay": false} {
		server.AddTool(&Tool{Name: name, InputSchema: &jsonschema.Schema{Type: "object"}}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
			out := fields
			if compact {
				out.RelayCompactJSON([]byte(relay))
			} else {
				out.RelayJSON([]byte(relay))
			}
			return &out, nil
		})
	}
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, &IOTransport{Reader: sr, Writer: sw}) }()
	defer func() {
		cw.Close()
		cancel()
		<-done
	}()
	in := bufio.NewReader(cr)
	send := func(msg string) {
		if _, err := io.WriteString(cw, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	read := func() []byte {
		line, err := in.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, version))
	if init := read(); !bytes.Contains(init, []byte(`"result"`)) {
		t.Fatalf("initialize: %s", init)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	var lines [][]byte
	for _, name := range []string{"compact", "relay"} {
		send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`)
		line := read()
		var resp struct{ Result json.RawMessage }
		if err := json.Unmarshal(line, &resp); err != nil || resp.Result == nil {
			t.Fatalf("%s: %s (%v)", name, line, err)
		}
		lines = append(lines, line)
	}
	return lines
}

// TestRelayCompactReset: RelayJSON and RelayJSONRoom after
// RelayCompactJSON are data to look at again (relayCompact false), and
// RelayCompactJSON after them is not.
func TestRelayCompactReset(t *testing.T) {
	var x CallToolResult
	x.RelayCompactJSON([]byte(`{}`))
	if !x.relayCompact {
		t.Fatal("RelayCompactJSON: relayCompact false")
	}
	x.RelayJSON([]byte(` { } `))
	if x.relayCompact {
		t.Error("RelayJSON after RelayCompactJSON: relayCompact true")
	}
	x.RelayCompactJSON([]byte(`{}`))
	x.RelayJSONRoom(append(make([]byte, 8, 16), ` { } `...), 8)
	if x.relayCompact {
		t.Error("RelayJSONRoom after RelayCompactJSON: relayCompact true")
	}
	// The relayed bytes of RelayJSON that are not compact are compacted
	// on the way, as before: the same as answering through
	// RelayCompactJSON with their compact form.
	for _, version := range []string{protocolVersion20250618, protocolVersion20260728} {
		spaced := relayCompactLines(t, version, ` { "content" : [ { "type" : "text" , "text" : "a b" } ] } `)
		compact := relayCompactLines(t, version, `{"content":[{"type":"text","text":"a b"}]}`)
		if !bytes.Equal(spaced[1], compact[0]) {
			t.Errorf("%s: RelayJSON of spaced bytes answered %s, RelayCompactJSON of them compacted %s", version, spaced[1], compact[0])
		}
	}
}
