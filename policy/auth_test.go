package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

const authRoles = `
roles:
  reader: {max_level: 0}
  writer: {max_level: 1}
  admin: {max_level: 3, admin: true}
principals:
  alice: {role: admin}
  bob: {role: reader}
default_role: reader
`

const goodKey = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func TestAuthBlockParses(t *testing.T) {
	p, err := Parse([]byte(authRoles + `
auth:
  resource: https://tools.example.com/mcp
  authorization_servers: [https://id.example.com]
  scopes: [mcp:tools]
  jwt:
    issuer: https://id.example.com
    jwks_url: https://id.example.com/.well-known/jwks.json
    roles_claim: realm_access.roles
  api_keys:
    - sha256: ` + goodKey + `
      principal: ci-bot
      roles: [writer]
`))
	if err != nil {
		t.Fatal(err)
	}
	a := p.Auth
	if a == nil || a.Resource != "https://tools.example.com/mcp" || a.JWT.Issuer != "https://id.example.com" ||
		a.JWT.RolesClaim != "realm_access.roles" || len(a.APIKeys) != 1 || a.APIKeys[0].Principal != "ci-bot" || a.Scopes[0] != "mcp:tools" {
		t.Fatalf("auth = %+v", a)
	}
}

func TestAuthBlockRefused(t *testing.T) {
	jwt := "\n  jwt: {issuer: https://id.example.com, jwks_url: https://id.example.com/jwks}"
	for _, tc := range []struct{ name, block, want string }{
		{"no resource", "auth:" + jwt, "auth.resource is required"},
		{"relative resource", "auth:\n  resource: /mcp" + jwt, "not an absolute URL"},
		{"fragment", "auth:\n  resource: https://a.example/mcp#x" + jwt, "fragment"},
		{"plain http remote", "auth:\n  resource: http://tools.example.com/mcp" + jwt, "want https"},
		{"ftp", "auth:\n  resource: ftp://tools.example.com/mcp" + jwt, "want https"},
		{"no credentials", "auth:\n  resource: https://a.example/mcp", "needs jwt or api_keys"},
		{"no issuer", "auth:\n  resource: https://a.example/mcp\n  jwt: {jwks_url: https://id.example.com/jwks}", "issuer is required"},
		{"no jwks", "auth:\n  resource: https://a.example/mcp\n  jwt: {issuer: https://id.example.com}", "exactly one of jwks_url and jwks_file"},
		{"both jwks", "auth:\n  resource: https://a.example/mcp\n  jwt: {issuer: x, jwks_url: https://id.example.com/j, jwks_file: j.json}", "exactly one"},
		{"http jwks remote", "auth:\n  resource: https://a.example/mcp\n  jwt: {issuer: x, jwks_url: http://id.example.com/j}", "plain http only on a loopback"},
		{"short hash", "auth:\n  resource: https://a.example/mcp\n  api_keys: [{sha256: 9f86d0, principal: ci}]", "64 hex digits"},
		{"not hex", "auth:\n  resource: https://a.example/mcp\n  api_keys: [{sha256: " + strings.Repeat("z", 64) + ", principal: ci}]", "64 hex digits"},
		{"no principal", "auth:\n  resource: https://a.example/mcp\n  api_keys: [{sha256: " + goodKey + "}]", "principal is required"},
		{"twice", "auth:\n  resource: https://a.example/mcp\n  api_keys: [{sha256: " + goodKey + ", principal: a}, {sha256: " + strings.ToUpper(goodKey) + ", principal: b}]", "listed twice"},
		{"unknown role", "auth:\n  resource: https://a.example/mcp\n  api_keys: [{sha256: " + goodKey + ", principal: a, roles: [root]}]", `role "root"`},
		{"scope with space", "auth:\n  resource: https://a.example/mcp\n  scopes: [\"a b\"]" + jwt, "not a scope"},
		{"unknown field", "auth:\n  resource: https://a.example/mcp\n  jwks: x" + jwt, "jwks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(authRoles + tc.block))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	for _, ok := range []string{"http://127.0.0.1:8080/mcp", "http://localhost/mcp", "http://[::1]:9/mcp", "https://a.example/mcp"} {
		if _, err := Parse([]byte("auth:\n  resource: " + ok + jwt)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

func TestAuthenticatedCallerRoles(t *testing.T) {
	p, err := Parse([]byte(authRoles + "deny: [delete_file]\n"))
	if err != nil {
		t.Fatal(err)
	}
	jwt := func(roles ...string) *tool.Credential {
		return &tool.Credential{Kind: tool.CredentialJWT, Roles: roles}
	}
	read := tool.Definition{Name: "read_file", Level: tool.LevelRead, Annotations: tool.Annotations{ReadOnly: true}, InputSchema: []byte(`{"type":"object"}`)}
	write := tool.Definition{Name: "write_file", Level: tool.LevelWrite, InputSchema: []byte(`{"type":"object"}`)}
	exec := tool.Definition{Name: "execute_command", Level: tool.LevelMedium, InputSchema: []byte(`{"type":"object"}`)}
	del := tool.Definition{Name: "delete_file", Level: tool.LevelWrite, InputSchema: []byte(`{"type":"object"}`)}
	for _, tc := range []struct {
		name   string
		call   tool.Call
		def    tool.Definition
		hidden bool
		role   string
	}{
		{"unknown local principal is refused", tool.Call{Principal: "mallory"}, read, true, ""},
		{"unknown authenticated principal gets the default role", tool.Call{Principal: "mallory", Auth: jwt()}, read, false, "reader"},
		{"default role cannot write", tool.Call{Principal: "mallory", Auth: jwt()}, write, true, ""},
		{"claim role wins", tool.Call{Principal: "mallory", Auth: jwt("writer")}, write, false, "writer"},
		{"claim roles the policy lacks are skipped", tool.Call{Principal: "mallory", Auth: jwt("root", "superuser", "admin")}, exec, false, "admin"},
		{"only undefined claim roles: default", tool.Call{Principal: "mallory", Auth: jwt("root")}, exec, true, ""},
		{"principals entry", tool.Call{Principal: "alice", Auth: jwt()}, exec, false, "admin"},
		{"claim role over principals entry", tool.Call{Principal: "alice", Auth: jwt("reader")}, exec, true, ""},
		{"reader principal", tool.Call{Principal: "bob", Auth: &tool.Credential{Kind: tool.CredentialAPIKey}}, exec, true, ""},
		{"local kind is not authenticated", tool.Call{Principal: "mallory", Auth: &tool.Credential{Kind: tool.CredentialLocal, Roles: []string{"admin"}}}, read, true, ""},
		{"roles of a local call are ignored", tool.Call{Principal: "bob", Auth: &tool.Credential{Kind: tool.CredentialLocal, Roles: []string{"admin"}}}, exec, true, ""},
		{"bare deny rule hides", tool.Call{Principal: "alice", Auth: jwt()}, del, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Hides(tc.def, tc.call); got != tc.hidden {
				t.Fatalf("Hides = %v, want %v", got, tc.hidden)
			}
			d := p.Decide(tc.def, tc.call)
			if !tc.hidden && (d.Effect == Deny || d.Role != tc.role) {
				t.Fatalf("Decide = %+v, want role %q and not denied", d, tc.role)
			}
			if tc.hidden && d.Effect != Deny {
				t.Fatalf("a hidden tool must be denied too: %+v", d)
			}
		})
	}
}

func TestHidesKeepsArgumentRulesForDecide(t *testing.T) {
	p, err := Parse([]byte("deny: ['Bash(rm:*)', 'Read(/etc/**)']\n"))
	if err != nil {
		t.Fatal(err)
	}
	exec := tool.Definition{Name: "execute_command", Level: tool.LevelMedium, InputSchema: []byte(`{"type":"object","properties":{"command":{"type":"string"}}}`)}
	if p.Hides(exec, tool.Call{}) {
		t.Fatal("a rule on some arguments must not hide the whole tool")
	}
	ro, _ := Parse([]byte("mode: read-only\n"))
	if !ro.Hides(exec, tool.Call{}) {
		t.Fatal("read-only mode hides a tool that can change things")
	}
}

func TestToolScopes(t *testing.T) {
	p, err := Parse([]byte(`
auth:
  resource: https://a.example/mcp
  api_keys: [{sha256: ` + goodKey + `, principal: ci}]
  tool_scopes:
    "execute_*": tools:exec
    write_file: files:write
    "*": mcp:tools
`))
	if err != nil {
		t.Fatal(err)
	}
	def := func(name string) tool.Definition {
		return tool.Definition{Name: name, Level: tool.LevelRead, Annotations: tool.Annotations{ReadOnly: true}, InputSchema: []byte(`{"type":"object"}`)}
	}
	cred := func(scopes ...string) *tool.Credential {
		return &tool.Credential{Kind: tool.CredentialJWT, Scopes: scopes}
	}
	for _, tc := range []struct {
		tool string
		call tool.Call
		want string // the rule of a denial, "" allowed
	}{
		{"read_file", tool.Call{Principal: "a", Auth: cred("mcp:tools")}, ""},
		{"read_file", tool.Call{Principal: "a", Auth: cred()}, "scope:mcp:tools"},
		{"execute_command", tool.Call{Principal: "a", Auth: cred("mcp:tools")}, "scope:tools:exec"},
		{"execute_command", tool.Call{Principal: "a", Auth: cred("mcp:tools", "tools:exec")}, ""},
		{"execute_command", tool.Call{Principal: "a", Auth: cred("tools:exec")}, ""}, // the most specific glob decides: "*" is not needed too
		{"write_file", tool.Call{Principal: "a", Auth: cred("mcp:tools", "tools:exec")}, "scope:files:write"},
		{"write_file", tool.Call{Principal: "a", Auth: &tool.Credential{Kind: tool.CredentialAPIKey}}, "scope:files:write"}, // the exact name, not "*"
		{"write_file", tool.Call{Principal: "a"}, ""},                                                                       // a local caller has no token to lack a scope
	} {
		d := p.Decide(def(tc.tool), tc.call)
		got := ""
		if d.Effect == Deny {
			got = d.Rule
		}
		if got != tc.want {
			t.Errorf("%s with %+v: %q (%s), want %q", tc.tool, tc.call.Auth, got, d.Reason, tc.want)
		}
		if got != "" && !strings.Contains(d.Reason, strings.TrimPrefix(got, "scope:")) {
			t.Errorf("the reason does not name the scope: %s", d.Reason)
		}
		if p.Hides(def(tc.tool), tc.call) {
			t.Errorf("%s: a missing scope must not hide the tool (the client may ask for more)", tc.tool)
		}
	}
	for _, bad := range []string{"tool_scopes: {\"[\": x}", "tool_scopes: {a: \"x y\"}", "tool_scopes: {a: \"\"}"} {
		if _, err := Parse([]byte("auth:\n  resource: https://a.example/mcp\n  api_keys: [{sha256: " + goodKey + ", principal: ci}]\n  " + bad + "\n")); err == nil || !strings.Contains(err.Error(), "tool_scopes") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestJWKSFileIsRelativeToThePolicyFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "toolgate.yaml")
	os.WriteFile(file, []byte("auth:\n  resource: https://a.example/mcp\n  jwt: {issuer: x, jwks_file: keys/jwks.json}\n"), 0o644)
	p, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "keys", "jwks.json"); p.Auth.JWT.JWKSFile != want {
		t.Fatalf("jwks_file = %s, want %s", p.Auth.JWT.JWKSFile, want)
	}
}

func TestElicitationNamesAnAuthenticatedCaller(t *testing.T) {
	req := Request{Call: tool.Call{Name: "write_file", Principal: "alice\x1b[2J", Auth: &tool.Credential{Kind: tool.CredentialJWT}}, Decision: Decision{Level: tool.LevelWrite}}
	msg, _ := ElicitationForm(req)
	if !strings.Contains(msg, "Caller: alice") || !strings.Contains(msg, "(jwt)") || strings.Contains(msg, "\x1b") {
		t.Fatalf("message %q", msg)
	}
	req.Call.Auth = nil
	if msg, _ := ElicitationForm(req); strings.Contains(msg, "Caller:") {
		t.Fatalf("a local caller's self-declared name is not shown as verified: %q", msg)
	}
}
