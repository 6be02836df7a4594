package kube

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfig: outside a cluster the gateway uses $KUBECONFIG's current
// context, and says what to set when there is none; a cluster that does
// not answer makes New fail, saying it could not read the template.
func TestConfig(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBECONFIG", filepath.Join(dir, "missing"))
	if _, err := Config(); err == nil || !strings.Contains(err.Error(), "set KUBECONFIG") {
		t.Errorf("Config without a kubeconfig = %v; want an error saying to set KUBECONFIG", err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	// 127.0.0.1:1: nothing listens there, the connection is refused at once.
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: toolgate-sandboxes}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	cfg, err := Config()
	if err != nil || cfg.Host != "https://127.0.0.1:1" || cfg.BearerToken != "t" {
		t.Fatalf("Config = %+v, %v; want the kubeconfig's server and token", cfg, err)
	}
	_, err = New(context.Background(), Options{Namespace: testNS, Template: "toolgate-sandbox", Secret: []byte(testSecret)})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("New against a cluster that does not answer = %v; want an error naming it", err)
	}
}
