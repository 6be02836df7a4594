package mcpserver_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolgate/toolgate/internal/conformancetest"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/mcpserver/internal/conformancefixture"
)

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
	node, modules := conformancetest.NPMTools(t, "..", "@modelcontextprotocol/conformance/dist/index.js")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := conformancefixture.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	url := serveLoopback(t, srv.Handler(mcpserver.HTTPOptions{Loopback: true}))

	conformancetest.ActiveSuite(t, node, modules, url)
}
