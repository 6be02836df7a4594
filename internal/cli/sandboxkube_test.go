package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policy"
)

// TestKubeBackend: backend kubernetes without its block's namespace and
// template is a usage error saying what to set; with them, a gateway whose
// cluster does not answer does not start, and says which it tried.
func TestKubeBackend(t *testing.T) {
	secret := []byte("runner-secret-0123456789abcdef")
	var ee *exitError
	if _, err := kubeBackend(context.Background(), nil, secret); !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), "sandbox.kubernetes.namespace and .template") {
		t.Errorf("kubeBackend without a block = %v; want a usage error naming what to set", err)
	}
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	// 127.0.0.1:1: nothing listens there, the connection is refused at once.
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", kc)
	_, err := kubeBackend(context.Background(), &policy.SandboxKubernetes{Namespace: "toolgate-sandboxes", Template: "toolgate-sandbox"}, secret)
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "PodTemplate toolgate-sandboxes/toolgate-sandbox") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("kubeBackend with no cluster answering = %v; want an error naming the template and the server", err)
	}
}
