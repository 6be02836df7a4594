package engine_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

type memAudit struct {
	mu   sync.Mutex
	recs []audit.Record
}

func (m *memAudit) Append(_ context.Context, r audit.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, r)
	return nil
}

// An authenticated caller is not shown, and cannot call, a tool the
// policy refuses it whatever the arguments; the refusal is the one a
// tool that does not exist gets, and names no hidden tool.
func TestHiddenToolsAreUnknownToAuthenticatedCallers(t *testing.T) {
	pol, err := policy.Parse([]byte(`
roles:
  reader: {max_level: 0}
  admin: {max_level: 3, admin: true}
principals:
  root: {role: admin}
default_role: reader
`))
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New()
	reg.Register(
		tool.New("read_note", "Reads a note.", func(context.Context, struct{}) (string, error) { return "seen", nil }, tool.ReadOnly()),
		tool.New("write_note", "Writes a note.", func(context.Context, struct{}) (string, error) { return "written", nil }, tool.WithLevel(tool.LevelWrite)),
		tool.New("run_notes", "Runs notes.", func(context.Context, struct{}) (string, error) { return "ran", nil }, tool.WithLevel(tool.LevelMedium)),
	)
	log := &memAudit{}
	e := engine.New(engine.Options{Registry: reg, Policy: pol, Auditor: log,
		Approver: policy.ApproverFunc(func(context.Context, policy.Request) (policy.Approval, error) {
			return policy.Approval{Approved: true}, nil
		})})
	jwt := &tool.Credential{Kind: tool.CredentialJWT, Issuer: "https://id.example.com", JTI: "j1"}
	key := &tool.Credential{Kind: tool.CredentialAPIKey, Key: "9f86d081", Roles: []string{"admin"}}
	for _, tc := range []struct {
		name    string
		call    tool.Call
		visible []string
	}{
		{"reader by token", tool.Call{Principal: "ann", Auth: jwt}, []string{"read_note"}},
		{"admin by principals", tool.Call{Principal: "root", Auth: jwt}, []string{"read_note", "write_note", "run_notes"}},
		{"admin by key role", tool.Call{Principal: "ci", Auth: key}, []string{"read_note", "write_note", "run_notes"}},
		{"local caller sees all", tool.Call{Principal: "ann"}, []string{"read_note", "write_note", "run_notes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := e.VisibleNames(tc.call); !slices.Equal(got, tc.visible) {
				t.Fatalf("visible %v, want %v", got, tc.visible)
			}
			for _, name := range []string{"read_note", "write_note", "run_notes"} {
				call := tc.call
				call.Name, call.Args = name, json.RawMessage(`{}`)
				res := e.Execute(context.Background(), call)
				if slices.Contains(tc.visible, name) {
					if res.Error != nil && call.Auth != nil {
						t.Fatalf("%s: %v", name, res.Error)
					}
					continue
				}
				if res.Error == nil || res.Error.Type != tool.UnknownTool || res.Error.Message != "there is no tool named \""+name+"\"" {
					t.Fatalf("%s: %+v, want unknown_tool", name, res.Error)
				}
				if near, _ := res.Error.Details["closest"].([]string); slices.ContainsFunc(near, func(n string) bool { return !slices.Contains(tc.visible, n) }) {
					t.Fatalf("%s: the refusal names a hidden tool: %v", name, near)
				}
			}
		})
	}
	kinds := map[string]int{}
	for _, r := range log.recs {
		kinds[r.Auth.Kind]++
		want := audit.Auth{Kind: audit.AuthLocal}
		if r.Auth.Kind == audit.AuthJWT {
			want = audit.Auth{Kind: audit.AuthJWT, Issuer: "https://id.example.com", JTI: "j1"}
		}
		if r.Principal == "ci" {
			want = audit.Auth{Kind: audit.AuthAPIKey, Key: "9f86d081"}
		}
		if r.Auth != want {
			t.Errorf("record of %s/%s: auth %+v, want %+v", r.Principal, r.Tool, r.Auth, want)
		}
	}
	if kinds[audit.AuthJWT] != 6 || kinds[audit.AuthAPIKey] != 3 || kinds[audit.AuthLocal] != 3 {
		t.Errorf("records by credential kind: %v", kinds)
	}
}
