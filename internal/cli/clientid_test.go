package cli

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/auth"
)

// A Client ID Metadata Document is served at its URL's path, unless that
// path is one of the gateway's own.
func TestClientIDDocuments(t *testing.T) {
	up := func(name, id string) *auth.Upstream {
		u, err := auth.NewUpstream(auth.UpstreamOptions{Name: name, URL: "https://mcp.example.com/mcp", OAuth: auth.OAuth{ClientIDMetadataURL: id}})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	docs, err := clientIDDocuments([]*auth.Upstream{up("a", "https://tools.example.com/oauth/client.json"), up("b", "https://tools.example.com/oauth/client.json"), up("c", "")}, "https://tools.example.com", true)
	if err != nil || len(docs) != 1 || docs["/oauth/client.json"] == nil {
		t.Fatalf("%v %v", docs, err)
	}
	for _, path := range []string{"/mcp", "/ui/client.json", "/.well-known/oauth-protected-resource/x", "/readyz"} {
		_, err := clientIDDocuments([]*auth.Upstream{up("a", "https://tools.example.com"+path)}, "https://tools.example.com", true)
		if err == nil || !strings.Contains(err.Error(), "the gateway's own") {
			t.Errorf("%s: %v", path, err)
		}
	}
}
