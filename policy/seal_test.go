package policy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/tool"
)

var stateSecret = []byte("a secret every replica shares, 32+ bytes long")

func sealer(t testing.TB, secret []byte) *StateSealer {
	s, err := NewStateSealer(secret, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func stateCall(principal, name, args string) tool.Call {
	return tool.Call{Principal: principal, Name: name, Args: json.RawMessage(args)}
}

// TestStateOpensForTheSameCallOnly: a state opens for the call it was
// sealed for (its arguments in any JSON spelling), on any replica sharing
// the secret, once; for any other principal, tool or arguments it is a
// mismatch, and it is not used up by the attempt.
func TestStateOpensForTheSameCallOnly(t *testing.T) {
	ctx := context.Background()
	sealed := stateCall("alice", "write_file", `{"path":"a.txt","content":"x","n":1}`)
	for _, tc := range []struct {
		name string
		call tool.Call
		want error
	}{
		{"same", sealed, nil},
		{"keys reordered, spaced", stateCall("alice", "write_file", ` { "n": 1, "content" : "x", "path":"a.txt" } `), nil},
		{"another principal", stateCall("bob", "write_file", `{"path":"a.txt","content":"x","n":1}`), ErrStateMismatch},
		{"no principal", stateCall("", "write_file", `{"path":"a.txt","content":"x","n":1}`), ErrStateMismatch},
		{"principal case", stateCall("Alice", "write_file", `{"path":"a.txt","content":"x","n":1}`), ErrStateMismatch},
		{"another tool", stateCall("alice", "edit_file", `{"path":"a.txt","content":"x","n":1}`), ErrStateMismatch},
		{"another path", stateCall("alice", "write_file", `{"path":"b.txt","content":"x","n":1}`), ErrStateMismatch},
		{"another content", stateCall("alice", "write_file", `{"path":"a.txt","content":"y","n":1}`), ErrStateMismatch},
		{"an extra argument", stateCall("alice", "write_file", `{"path":"a.txt","content":"x","n":1,"mode":"append"}`), ErrStateMismatch},
		{"a missing argument", stateCall("alice", "write_file", `{"path":"a.txt","content":"x"}`), ErrStateMismatch},
		{"a number spelled otherwise", stateCall("alice", "write_file", `{"path":"a.txt","content":"x","n":1.0}`), ErrStateMismatch},
		{"a string for a number", stateCall("alice", "write_file", `{"path":"a.txt","content":"x","n":"1"}`), ErrStateMismatch},
		{"unicode escape of the same text", stateCall("alice", "write_file", `{"path":"a\u002etxt","content":"x","n":1}`), nil},
		{"no arguments", stateCall("alice", "write_file", ``), ErrStateMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := sealer(t, stateSecret), sealer(t, stateSecret) // two replicas
			once := &MemoryOnce{}
			state, err := a.Seal(sealed, Asked{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Open(ctx, state, tc.call, once); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("open: %v, want %v", err, tc.want)
			}
			if tc.want != nil { // a refused attempt does not use the state up
				if _, err := b.Open(ctx, state, sealed, once); err != nil {
					t.Fatalf("the sealed call after a refused one: %v", err)
				}
			}
			for _, r := range []*StateSealer{a, b} {
				if _, err := r.Open(ctx, state, sealed, once); !errors.Is(err, ErrStateUsed) {
					t.Errorf("a second use: %v, want ErrStateUsed", err)
				}
			}
		})
	}
}

// TestStateRefusesForgeries: a state altered anywhere, spelled otherwise,
// sealed under another secret or not sealed at all is invalid.
func TestStateRefusesForgeries(t *testing.T) {
	ctx := context.Background()
	s := sealer(t, stateSecret)
	call := stateCall("alice", "execute_command", `{"command":"make deploy"}`)
	state, err := s.Seal(call, Asked{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(state)
	var forged []string
	for i := range raw { // every byte, one bit
		b := append([]byte(nil), raw...)
		b[i] ^= 1 << (i % 8)
		forged = append(forged, base64.RawURLEncoding.EncodeToString(b))
	}
	other, _ := sealer(t, []byte(strings.Repeat("another secret, ", 3))).Seal(call, Asked{})
	last := state[len(state)-1]
	forged = append(forged,
		"", "x", state[:len(state)-1], state+"A", state+"=", state+"\n", "\n"+state, state[:10]+"\n"+state[10:],
		strings.ReplaceAll(state, "-", "+"), strings.ToUpper(state), other,
		state[:len(state)-1]+string(rune(last^1)), // another spelling of the last bits, or another byte
		base64.StdEncoding.EncodeToString(raw), base64.URLEncoding.EncodeToString(raw),
		strings.Repeat("A", 5000), string(raw),
	)
	// a state whose plaintext is not ours: sealed as JSON of another shape
	nonce := make([]byte, s.aead.NonceSize())
	forged = append(forged, base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(`{"x":1}`), []byte(sealAD))))
	forged = append(forged, base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(`{"id":"x","p":"alice","t":"execute_command","a":"","exp":1}`), []byte("another purpose"))))
	for _, f := range forged {
		if f == state {
			continue
		}
		if _, err := s.Open(ctx, f, call, &MemoryOnce{}); !errors.Is(err, ErrStateInvalid) {
			t.Errorf("forged %q: %v, want ErrStateInvalid", f, err)
		}
	}
	if _, err := s.Open(ctx, state, call, &MemoryOnce{}); err != nil {
		t.Errorf("the real state: %v", err)
	}
}

func TestStateExpires(t *testing.T) {
	ctx := context.Background()
	s := sealer(t, stateSecret)
	start := time.Now()
	s.now = func() time.Time { return start }
	call := stateCall("", "delete_file", `{"path":"x"}`)
	state, _ := s.Seal(call, Asked{})
	for _, tc := range []struct {
		after time.Duration
		want  error
	}{
		{time.Minute + time.Millisecond, ErrStateExpired},
		{time.Hour, ErrStateExpired},
		{time.Minute, ErrStateExpired},
		{time.Minute - time.Millisecond, nil},
	} {
		s.now = func() time.Time { return start.Add(tc.after) }
		if _, err := s.Open(ctx, state, call, &MemoryOnce{}); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("after %s: %v, want %v", tc.after, err, tc.want)
		}
	}
}

func TestStateSecretLength(t *testing.T) {
	for n, ok := range map[int]bool{0: false, 16: false, 31: false, 32: true, 64: true} {
		if _, err := NewStateSealer(make([]byte, n), 0); (err == nil) != ok {
			t.Errorf("a secret of %d bytes: %v", n, err)
		}
	}
}

// FuzzOpenState: Open never panics on any state, and accepts none but the
// ones sealed here, unchanged.
func FuzzOpenState(f *testing.F) {
	// Seeds sealed the same in every fuzzing process: fixed ids, nonces
	// and clock.
	s := sealer(f, stateSecret)
	now := time.Date(2026, 7, 28, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	call := stateCall("p", "t", `{"a":1}`)
	sealed := map[string]bool{}
	for i := range 3 {
		nonce := make([]byte, s.aead.NonceSize())
		nonce[0] = byte(i)
		st, err := s.seal(sealedState{ID: fmt.Sprint("id", i), Principal: "p", Tool: "t", Args: argsDigest(call.Args), Expires: now.Add(time.Minute).UnixMilli()}, nonce)
		if err != nil {
			f.Fatal(err)
		}
		sealed[st] = true
		f.Add(st)
	}
	f.Add("")
	f.Add("AAAA")
	f.Fuzz(func(t *testing.T, state string) {
		_, err := s.Open(context.Background(), state, call, &MemoryOnce{})
		if err == nil && !sealed[state] {
			t.Fatalf("opened a state that was never sealed: %q", state)
		}
	})
}

// TestInputRequestsThroughGate: behind a Gate, a first call gets an
// input_required error carrying the question and a state (not a denial:
// no streak); the retry with the user's answer and that state is approved
// or denied as answered; the state's second use is a denial.
func TestInputRequestsThroughGate(t *testing.T) {
	type answer struct {
		state, action string
		content       map[string]any
	}
	type answerKey struct{}
	in := InputRequests{Sealer: sealer(t, stateSecret), Once: &MemoryOnce{}, MessageKey: "m", SchemaKey: "s", StateKey: "st",
		Answer: func(ctx context.Context) (string, string, map[string]any, bool) {
			a, ok := ctx.Value(answerKey{}).(answer)
			return a.state, a.action, a.content, ok
		}}
	g := NewGate(in, nil)
	def := tool.Definition{Name: "write_file", Level: tool.LevelMedium}
	req := Request{Call: tool.Call{Name: "write_file", Principal: "alice", Session: "s", Args: json.RawMessage(`{"path":"a"}`)}, Definition: def,
		Decision: Decision{Effect: Ask, Rule: "level:2", Reason: "asks", Level: tool.LevelMedium}}
	ctx := context.Background()
	ask := func() string {
		t.Helper()
		for range 4 { // more than the denial streak: asking is not a denial
			_, err := g.Approve(ctx, req)
			var te *tool.Error
			if !errors.As(err, &te) || te.Type != tool.InputRequired || te.Details["m"] == nil || te.Details["s"] == nil {
				t.Fatalf("first call: %v", err)
			}
			if st, _ := te.Details["st"].(string); st != "" {
				return st
			}
		}
		return ""
	}
	for _, tc := range []struct {
		a        answer
		approved bool
		reason   string
	}{
		{answer{action: "accept", content: map[string]any{"decision": "once"}}, true, ""},
		{answer{action: "accept", content: map[string]any{"decision": "deny", "reason": "not now"}}, false, "not now"},
		{answer{action: "decline"}, false, "declined"},
		{answer{action: "accept", content: map[string]any{"decision": "sometimes"}}, false, "not one of the choices"},
	} {
		tc.a.state = ask()
		actx := context.WithValue(ctx, answerKey{}, tc.a)
		a, err := g.Approve(actx, req)
		if err != nil || a.Approved != tc.approved || !strings.Contains(a.Reason, tc.reason) || a.Approver != "input request" {
			t.Errorf("%+v: %+v %v", tc.a, a, err)
		}
		if a, err := g.Approve(actx, req); err != nil || a.Approved || !strings.Contains(a.Reason, ErrStateUsed.Error()) {
			t.Errorf("%+v again: %+v %v", tc.a, a, err)
		}
	}
}
