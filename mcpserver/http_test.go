package mcpserver_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/mcpserver"
)

func TestHTTPGuard(t *testing.T) {
	f := newFixture(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	for _, tc := range []struct {
		name         string
		loopback     bool
		host, origin string
		want         int
	}{
		{"localhost", true, "localhost:8765", "", 200},
		{"127.0.0.1 with origin", true, "127.0.0.1:8765", "http://127.0.0.1:8765", 200},
		{"[::1]", true, "[::1]:8765", "http://localhost:3000", 200},
		{"rebinding host", true, "evil.example.com:8765", "", 403},
		{"rebinding host and origin", true, "evil.example.com", "http://evil.example.com", 403},
		{"foreign origin", true, "localhost:8765", "https://evil.example.com", 403},
		{"null origin", true, "localhost:8765", "null", 403},
		{"lookalike host", true, "localhost.evil.com", "", 403},
		{"remote same origin", false, "tools.example.com", "https://tools.example.com", 200},
		{"remote cross origin", false, "tools.example.com", "https://evil.example.com", 403},
	} {
		h := f.srv.Handler(mcpserver.HTTPOptions{Loopback: tc.loopback})
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(init))
		r.Host = tc.host
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, w.Code, tc.want, w.Body.String())
		}
	}
}

func TestHTTPRequestLimit(t *testing.T) {
	f := newFixture(t)
	h := f.srv.Handler(mcpserver.HTTPOptions{Loopback: true, MaxRequestBytes: 1024})
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 4096) + `"}}`
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	r.Host = "localhost"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized request: status %d, want 413", w.Code)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8765": true, "[::1]:1": true, "localhost:80": true, "127.1.2.3:9": true,
		"0.0.0.0:8765": false, ":8765": false, "[::]:1": false, "192.168.1.2:80": false, "example.com:80": false, "nonsense": false,
	} {
		if got := mcpserver.IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
