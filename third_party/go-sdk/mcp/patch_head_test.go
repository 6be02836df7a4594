// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"fmt"
	"testing"
)

// PATCH(toolgate): patch 30, a relayed result's head from a cache. For
// every result a handler may return and every server implementation,
// changed in place between calls, the session writes the bytes that
// annotateServerInfo and relayed wrote (patches 6 and 22).

// TestHeadRelayed: ServerSession.handle's annotation of a result (the
// 2026-07-28 protocol) followed by relayed, as patch 30 does it (the
// cached head when headRelayed gives one, else annotateServerInfo) and as
// before (annotateServerInfo always): the same frame, the same room.
func TestHeadRelayed(t *testing.T) {
	impl := &Implementation{}
	s := NewServer(impl, nil)
	changes := []func(){
		func() { *impl = Implementation{Name: "toolgate", Version: "1"} },
		func() { impl.Version = "2" },
		func() { impl.Name = "a<b>&\"c\" \u2028 é" },
		func() { impl.Title, impl.Description, impl.WebsiteURL = "T", "D", "https://x/?a=1&b=2" },
		func() { impl.Icons = []Icon{{Source: "data:x", Sizes: []string{"48x48"}}} },
		func() { impl.Icons[0].Sizes[0] = "96x96" }, // in place: the cache's copy must not follow
		func() { impl.Icons[0].Sizes = append(impl.Icons[0].Sizes, "any") },
		func() { impl.Icons[0].Theme = "dark" },
		func() { impl.Icons[0].MIMEType = "image/png" },
		func() { impl.Icons = append(impl.Icons, Icon{Source: "s"}) },
		func() { impl.Icons[1].Source = "t" },
		func() { impl.Icons[1].Sizes = []string{} },
		func() { impl.Icons = []Icon{} },
		func() { impl.Icons = nil },
		func() { impl.Description = "" },
		func() { *impl = Implementation{} },
		func() { impl.Name, impl.Version = "toolgate", "1" }, // as the next pass starts: only the result type changes
	}
	bodies := []string{`{"content":[]}`, " \t{\"a\":1}", `{}`, `{ }`, `[1]`, ``, `"x"`, `null`}
	metas := []func() Meta{
		func() Meta { return nil },
		func() Meta { return Meta{} },
		func() Meta { return Meta{"k": "v"} },
		func() Meta { return Meta{MetaKeyServerInfo: "other"} },
	}
	cached := 0
	// Each result type on its own pass through the changes, so that a
	// change meets the head cached before it.
	for _, rt := range []resultType{"", resultTypeComplete, resultTypeInputRequired, ""} {
		for i, change := range changes {
			change()
			for round := 0; round < 2; round++ { // the second from the cache
				for _, body := range bodies {
					for j, meta := range metas {
						name := fmt.Sprintf("change %d, %q, meta %d, %q", i, body, j, rt)
						before := &CallToolResult{Meta: meta(), resultType: rt}
						before.RelayJSON([]byte(body))
						setCompleteResultType(before)
						annotateServerInfo(before, s.impl)
						wantFrame, wantRoom, _ := before.relayed()

						after := &CallToolResult{Meta: meta(), resultType: rt}
						after.RelayJSON([]byte(body))
						setCompleteResultType(after)
						if s.headRelayed(after) {
							cached++
							if after.Meta != nil {
								t.Fatalf("%s: a Meta made", name)
							}
						} else {
							annotateServerInfo(after, s.impl)
						}
						frame, room, _ := after.relayed()
						if string(frame[room:]) != string(wantFrame[wantRoom:]) || room != wantRoom || (frame == nil) != (wantFrame == nil) {
							t.Fatalf("%s: relayed %q (room %d), before %q (room %d)", name, frame[room:], room, wantFrame[wantRoom:], wantRoom)
						}
					}
				}
			}
		}
	}
	if want := 3 * len(changes) * 2 * 4; cached != want { // four bodies are objects, with a nil Meta; three passes cache
		t.Errorf("%d heads from the cache, want %d", cached, want)
	}
	// A server without an implementation annotates nothing, as before.
	var none Server
	x := &CallToolResult{}
	x.RelayJSON([]byte(`{}`))
	if none.headRelayed(x) {
		t.Error("a head without an implementation")
	}
}
