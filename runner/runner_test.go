package runner

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManage: PUT makes a sandbox once, its MCP path answers only once it
// exists, GET /sandboxes lists it under ListID's token alone, DELETE
// closes it and removes its workspace, twice without error.
func TestManage(t *testing.T) {
	secret := []byte("runner-test-secret-0123")
	dir := t.TempDir()
	closed := map[string]int{}
	r, err := New(Options{Dir: dir, Secret: secret, Open: func(id, ws string) (http.Handler, io.Closer, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "sandbox "+id) }),
			closer(func() error { closed[id]++; return nil }), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	do := func(method, path, id string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if id != "" {
			req.Header.Set("Authorization", "Bearer "+Token(secret, id))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do("POST", "/sandboxes/sb-a/mcp", "sb-a"); code != 404 || !strings.Contains(body, "PUT /sandboxes/sb-a") {
		t.Errorf("MCP before PUT: %d %s", code, body)
	}
	if code, body := do("PUT", "/sandboxes/sb-a", "sb-a"); code != 201 || !strings.Contains(body, `"created":true`) {
		t.Errorf("first PUT: %d %s", code, body)
	}
	if code, body := do("PUT", "/sandboxes/sb-a", "sb-a"); code != 200 || !strings.Contains(body, `"created":false`) {
		t.Errorf("second PUT: %d %s", code, body)
	}
	if code, _ := do("PUT", "/sandboxes/sb-a", "sb-b"); code != 401 {
		t.Errorf("PUT with another sandbox's token: %d", code)
	}
	if code, body := do("POST", "/sandboxes/sb-a/mcp", "sb-a"); code != 200 || body != "sandbox sb-a" {
		t.Errorf("MCP after PUT: %d %s", code, body)
	}
	for _, id := range []string{"", "sb-a"} {
		if code, _ := do("GET", "/sandboxes", id); code != 401 {
			t.Errorf("GET /sandboxes with the token of %q: %d, want 401", id, code)
		}
	}
	code, body := do("GET", "/sandboxes", ListID)
	var list struct{ Sandboxes []string }
	json.Unmarshal([]byte(body), &list)
	if code != 200 || len(list.Sandboxes) != 1 || list.Sandboxes[0] != "sb-a" {
		t.Errorf("GET /sandboxes: %d %s", code, body)
	}
	if code, _ := do("POST", "/sandboxes/sb-a", "sb-a"); code != 405 {
		t.Errorf("POST /sandboxes/sb-a: %d, want 405", code)
	}
	os.WriteFile(filepath.Join(dir, "sb-a", "f"), []byte("x"), 0o600)
	for range 2 {
		if code, _ := do("DELETE", "/sandboxes/sb-a", "sb-a"); code != 204 {
			t.Errorf("DELETE: %d", code)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sb-a")); !os.IsNotExist(err) || closed["sb-a"] != 1 {
		t.Errorf("after DELETE: %v, closed %d times", err, closed["sb-a"])
	}
	if code, _ := do("POST", "/sandboxes/sb-a/mcp", "sb-a"); code != 404 {
		t.Errorf("MCP after DELETE: %d, want 404", code)
	}
}

type closer func() error

func (c closer) Close() error { return c() }
