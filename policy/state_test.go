package policy_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policy"
)

func TestStateRedisBlock(t *testing.T) {
	for _, tc := range []struct {
		yaml    string
		wantErr string // "" : parses
	}{
		{"url: redis://127.0.0.1:6379/0", ""},
		{"url: rediss://cache.internal:6380/2\npassword_env: REDIS_PW", ""},
		{"url: redis://default@10.0.0.1:6379\nprefix: 'team-a:'\non_error: allow", ""},
		{"url: redis://[::1]:6379/0\non_error: deny", ""},
		{"prefix: x", "url is required"},
		{"url: http://127.0.0.1:6379", "scheme"},
		{"url: unix:///run/redis.sock", "scheme"},
		{"url: redis://", "no host"},
		{"url: redis://:hunter2@127.0.0.1:6379", "password"},
		{"url: redis://user:hunter2@127.0.0.1:6379", "password"},
		{"url: rediss://u:p@h:1/0", "password"},
		{"url: redis://127.0.0.1:6379/notanumber", "url"},
		{"url: redis://127.0.0.1:6379\npassword_env: 'A B'", "password_env"},
		{"url: redis://127.0.0.1:6379\npassword_env: 1PW", "password_env"},
		{"url: redis://127.0.0.1:6379\npassword_env: 'PW=x'", "password_env"},
		{"url: redis://127.0.0.1:6379\non_error: ignore", "on_error"},
		{"url: redis://127.0.0.1:6379\non_error: DENY", "on_error"},
		{"url: redis://127.0.0.1:6379\npassword: x", "password"},
	} {
		src := "state:\n  redis:\n    " + strings.ReplaceAll(tc.yaml, "\n", "\n    ") + "\n"
		p, err := policy.Parse([]byte(src))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.yaml, err)
		case tc.wantErr != "" && err == nil:
			t.Errorf("%q: parsed, want an error about %s", tc.yaml, tc.wantErr)
		case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("%q: error %q does not mention %s", tc.yaml, err, tc.wantErr)
		case err == nil && p.State.Redis == nil:
			t.Errorf("%q: no state.redis", tc.yaml)
		}
	}
}

func TestStateRedisDefaults(t *testing.T) {
	p, err := policy.Parse([]byte("state:\n  redis:\n    url: rediss://127.0.0.1:6380/3\n    password_env: TG_TEST_REDIS_PW\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := p.State.Redis
	if r.KeyPrefix() != "toolgate:" || r.Mode() != policy.OnErrorDeny {
		t.Errorf("defaults: prefix %q, on_error %q", r.KeyPrefix(), r.Mode())
	}
	if p, _ := policy.Parse([]byte("limits: {}\n")); p.State.Redis != nil {
		t.Error("no state section, yet a redis block")
	}
}
