package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
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

// TestStartFailureEveryUpstream: with several upstreams failing to start,
// the command reports each, a sign-in wanted among them as its text, and
// exits with the code of a box below the policy's level if one is.
func TestStartFailureEveryUpstream(t *testing.T) {
	signIn := fmt.Errorf("mcpclient: connecting to a: %w", &tool.Error{Type: tool.AuthRequired, Message: "sign in to a", Suggestion: "run toolgate auth login a"})
	broken := errors.New("mcpclient: connecting to b: exit status 3")
	box := fmt.Errorf("upstream c: %w", &exitError{7, errors.New("its box is below the policy's level")})
	for _, tc := range []struct {
		err  error
		code int
		want []string
	}{
		{errors.Join(signIn, broken), exitTool, []string{"Error [auth_required]: sign in to a", "run toolgate auth login a", "connecting to b: exit status 3"}},
		{errors.Join(broken, box, signIn), 7, []string{"connecting to b", "below the policy's level", "sign in to a"}},
		{signIn, exitTool, []string{"Error [auth_required]: sign in to a"}},
		{box, 7, []string{"below the policy's level"}},
	} {
		var ee *exitError
		if err := startFailure(tc.err); !errors.As(err, &ee) || ee.code != tc.code {
			t.Errorf("%v: exit %v, want code %d", tc.err, err, tc.code)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(ee.Error(), w) {
				t.Errorf("%v: reported %q, without %q", tc.err, ee.Error(), w)
			}
		}
	}
}
