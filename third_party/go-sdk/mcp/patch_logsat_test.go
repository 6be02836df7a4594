// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// v180Logs is v1.8.0's ServerSession.Log's test of whether a message of
// level is sent, as it was written there.
func v180Logs(ctx context.Context, ss *ServerSession, level LoggingLevel) bool {
	logLevel, ok := logLevelFromContext(ctx)
	if !ok {
		ss.mu.Lock()
		logLevel = ss.state.LogLevel
		ss.mu.Unlock()
	}
	if logLevel == "" {
		return false
	}
	if compareLevels(level, logLevel) < 0 {
		return false
	}
	return true
}

// PATCH(toolgate): patch 24. LogsAt says what v1.8.0's Log decided, and
// Log sends exactly the messages LogsAt says it sends, for every level the
// client set (none, each level, an unknown one), each level a request's
// _meta asked for (none, none given, each level), and each message level.
func TestLogsAt(t *testing.T) {
	ctx := context.Background()
	levels := []LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency", "bogus"}
	logged := make(chan string, 100)
	synced := make(chan any, 1)
	client := NewClient(testImpl, &ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *LoggingMessageRequest) {
			logged <- r.Params.Data.(string)
		},
		ProgressNotificationHandler: func(_ context.Context, r *ProgressNotificationClientRequest) {
			synced <- r.Params.ProgressToken
		},
	})
	server := NewServer(testImpl, nil)
	ct, st := NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	sent, round := 0, 0
	try := func(ctx context.Context, what string) {
		t.Helper()
		want := map[string]bool{}
		for _, l := range levels {
			data := what + "/" + string(l)
			says := ss.LogsAt(ctx, l)
			if v180 := v180Logs(ctx, ss, l); says != v180 {
				t.Errorf("%s: LogsAt %v, v1.8.0's Log %v", data, says, v180)
			}
			if says {
				want[data] = true
				sent++
			}
			if err := ss.Log(ctx, &LoggingMessageParams{Level: l, Data: data}); err != nil {
				t.Fatal(err)
			}
		}
		// Notifications arrive in order: once the progress sent after the
		// messages is in, every message Log sent is in too.
		round++
		if err := ss.NotifyProgress(ctx, &ProgressNotificationParams{ProgressToken: round, Progress: 1}); err != nil {
			t.Fatal(err)
		}
		select { // bounded: a lost notification fails the test rather than hang it
		case <-synced:
		case <-time.After(time.Minute):
			t.Fatalf("%s: the progress notification sent after the messages did not arrive in a minute", what)
		}
		for len(logged) > 0 {
			data := <-logged
			if !want[data] {
				t.Errorf("%s sent, LogsAt said not", data)
			}
			delete(want, data)
		}
		for data := range want {
			t.Errorf("%s not sent, LogsAt said it would be", data)
		}
	}
	metaCtx := func(l *LoggingLevel) context.Context {
		if l == nil {
			return ctx
		}
		return context.WithValue(ctx, logLevelContextKey{}, *l)
	}
	none := LoggingLevel("")
	metas := []*LoggingLevel{nil, &none}
	for i := range levels[:8] {
		metas = append(metas, &levels[i])
	}
	metaName := func(l *LoggingLevel) string {
		if l == nil {
			return "absent"
		}
		return fmt.Sprintf("%q", *l)
	}
	for _, m := range metas {
		try(metaCtx(m), "set=unset,meta="+metaName(m))
	}
	for _, set := range levels {
		if err := cs.SetLoggingLevel(ctx, &SetLoggingLevelParams{Level: set}); err != nil {
			t.Fatal(err)
		}
		for _, m := range metas {
			try(metaCtx(m), "set="+string(set)+",meta="+metaName(m))
		}
	}
	if sent == 0 || sent == len(levels)*len(metas)*(len(levels)+1) {
		t.Fatalf("%d messages sent: the cases do not tell sending from not", sent)
	}
}
