package cli

import (
	"path/filepath"
	"testing"
)

// The documented example configuration is valid.
func TestProxyExampleConfig(t *testing.T) {
	cfg, _, err := loadProxyConfig(filepath.Join("..", "..", "docs", "proxy.example.yaml"))
	if err != nil {
		t.Fatalf("docs/proxy.example.yaml: %v", err)
	}
	if len(cfg) == 0 {
		t.Fatal("docs/proxy.example.yaml names no upstream")
	}
}
