package mcpserver_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/internal/conformancetest"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/mcpserver/internal/conformancefixture"
)

// npmTools returns node (≥ 22) and the folder of the pinned npm packages
// that scripts/test-deps.sh installs under the repository's .cache.
func npmTools(t *testing.T) (node, modules string) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(root, ".cache", "node22", "node_modules", "node", "bin", "node")
	modules = filepath.Join(root, ".cache", "mcp", "node_modules")
	for _, p := range []string{node, filepath.Join(modules, "@modelcontextprotocol", "conformance", "dist", "index.js")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run `make deps` (./scripts/test-deps.sh) to install Node 22 and the MCP test tools", p)
		}
	}
	return node, modules
}

// serveLoopback serves h at /mcp on a loopback port and returns the URL.
func serveLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestConformanceFixture runs the whole active server suite of the official
// conformance package against the fixture server, which is built on
// mcpserver (its tools run through the engine).
func TestConformanceFixture(t *testing.T) {
	node, modules := npmTools(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := conformancefixture.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	url := serveLoopback(t, srv.Handler(mcpserver.HTTPOptions{Loopback: true}))

	conformancetest.ActiveSuite(t, node, modules, url)
}
