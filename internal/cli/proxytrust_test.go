package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/trust"
)

// TestWebhookSecretEnv: the webhook's requests are signed with the secret
// of the variable trust.webhook.secret_env names (else of
// TOOLGATE_WEBHOOK_SECRET), unsigned without one, and a named variable
// that is not set stops the gateway rather than sending unsigned requests.
func TestWebhookSecretEnv(t *testing.T) {
	signed := make(chan string, 8)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		signed <- r.Header.Get("webhook-signature")
		w.Write([]byte(`{"decision":"allow"}`))
	}))
	defer hook.Close()
	echo := tool.New("echo", "Echo.", func(_ context.Context, in struct{ Text string }) (string, error) { return in.Text, nil })
	for _, tc := range []struct {
		name, secretEnv string
		env             map[string]string
		signed          bool
		err             string
	}{
		{name: "default variable unset: unsigned"},
		{name: "default variable", env: map[string]string{"TOOLGATE_WEBHOOK_SECRET": "s3cret-default"}, signed: true},
		{name: "named variable", secretEnv: "HOOK_KEY", env: map[string]string{"HOOK_KEY": "whsec_c2VjcmV0LWtleS1ieXRlcw=="}, signed: true},
		{name: "named variable unset", secretEnv: "HOOK_KEY_MISSING", err: "HOOK_KEY_MISSING, which is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TOOLGATE_WEBHOOK_SECRET", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			wrap, err := trustWrap(policy.Trust{Results: "off", Webhook: &policy.Webhook{URL: hook.URL, SecretEnv: tc.secretEnv}}, nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := wrap("up", "echo", echo).Run(context.Background(), tool.Call{ID: "1", Name: "up__echo", Args: json.RawMessage(`{"Text":"hi"}`)})
			if err != nil || res.Error != nil {
				t.Fatalf("call: %v %+v", err, res.Error)
			}
			for range 2 { // the call phase and the result phase
				if sig := <-signed; (sig != "") != tc.signed || (tc.signed && !strings.HasPrefix(sig, "v1,")) {
					t.Errorf("webhook-signature %q, want signed=%v", sig, tc.signed)
				}
			}
		})
	}
}

// TestIdentifyAhead: the identity taken as the gateway starts is the first
// listing's, and equal to one taken then; each later listing takes it
// again, so an executable or a script changed since is seen.
func TestIdentifyAhead(t *testing.T) {
	dir := t.TempDir()
	exe, script := filepath.Join(dir, "server"), filepath.Join(dir, "main.js")
	os.WriteFile(exe, []byte("#!/bin/sh\necho one\n"), 0o755)
	os.WriteFile(script, []byte("serve()\n"), 0o644)
	cfg := mcpclient.Config{Name: "up", Command: exe, Args: []string{script}}
	v := &pinVetter{}
	v.identifyAhead([]mcpclient.Config{cfg, {Name: "remote", URL: "http://127.0.0.1:1/mcp"}})
	first, err := v.identify(cfg)
	now, err2 := trust.Identify(exe, []string{script}, "", "")
	if err != nil || err2 != nil || first.SHA256 == "" || first.SHA256 != now.SHA256 || first.Files[script] != now.Files[script] {
		t.Fatalf("identity taken ahead %+v %v, taken now %+v %v", first, err, now, err2)
	}
	os.WriteFile(exe, []byte("#!/bin/sh\necho two\n"), 0o755)
	if again, err := v.identify(cfg); err != nil || again.SHA256 == first.SHA256 {
		t.Errorf("a changed executable kept its identity: %+v %v", again, err)
	}
	os.WriteFile(script, []byte("serve(); steal()\n"), 0o644)
	if again, err := v.identify(cfg); err != nil || again.Files[script] == first.Files[script] {
		t.Errorf("a changed script kept its identity: %+v %v", again, err)
	}
}
