package policy

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// StateSealer seals and opens the requestState of an approval asked as an
// input request (MCP 2026-07-28, where a server may not send the client a
// request while it serves a call: it ends the call with the question, and
// the client calls again with the answer and the state echoed). Replicas
// keep nothing between the two calls, so the state carries what was asked
// about, sealed with AES-256-GCM under a key derived from a secret every
// replica shares: the principal, the tool, the SHA-256 of the canonical
// arguments, an expiry and a random id. Open accepts a state only for the
// very same call (same principal, tool and arguments), before it expires,
// and once: its id is claimed in a OnceStore (Redis SET NX across
// replicas), so an answer cannot be replayed.
type StateSealer struct {
	aead cipher.AEAD
	ttl  time.Duration
	now  func() time.Time
}

// sealAD is the additional data of every sealed state: a state sealed for
// another purpose under the same key does not open here.
const sealAD = "toolgate/approval-state/v1"

// MinStateSecret is the shortest secret NewStateSealer accepts.
const MinStateSecret = 32

// DefaultStateTTL is how long a sealed state stays valid when NewStateSealer
// is given no TTL: long enough for a person to answer.
const DefaultStateTTL = 5 * time.Minute

// NewStateSealer returns a sealer keyed by secret (at least MinStateSecret
// bytes, the same on every replica) whose states expire after ttl (0:
// DefaultStateTTL).
func NewStateSealer(secret []byte, ttl time.Duration) (*StateSealer, error) {
	if len(secret) < MinStateSecret {
		return nil, fmt.Errorf("policy: the approval state secret is %d bytes: give at least %d", len(secret), MinStateSecret)
	}
	key, err := hkdf.Key(sha256.New, secret, nil, sealAD, 32)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if ttl <= 0 {
		ttl = DefaultStateTTL
	}
	return &StateSealer{aead: aead, ttl: ttl, now: time.Now}, nil
}

// sealedState is what a state carries.
type sealedState struct {
	ID        string   `json:"id"`
	Principal string   `json:"p"`
	Tool      string   `json:"t"`
	Args      string   `json:"a"`   // hex SHA-256 of the canonical arguments
	Expires   int64    `json:"exp"` // Unix ms
	Question  string   `json:"q,omitempty"`
	Approved  []string `json:"ok,omitempty"`
}

// Asked is what a state says was asked about its call: the question it
// answers, and the questions of the same call approved in earlier rounds
// (a call may be asked twice: by the policy, then by the tool itself).
type Asked struct {
	Question string
	Approved []string
}

// The reasons Open refuses a state.
var (
	ErrStateInvalid  = errors.New("the requestState was not sealed by this server (or was altered)")
	ErrStateExpired  = errors.New("the requestState has expired")
	ErrStateMismatch = errors.New("the requestState was issued for another call (principal, tool or arguments differ)")
	ErrStateUsed     = errors.New("the requestState was used already")
)

// maxState bounds what Open reads: a sealed state is ~200 bytes.
const maxState = 4096

// Seal returns the state of a question about call.
func (s *StateSealer) Seal(call tool.Call, asked Asked) (string, error) {
	st := sealedState{ID: rand.Text(), Principal: call.Principal, Tool: call.Name, Args: argsDigest(call.Args),
		Expires: s.now().Add(s.ttl).UnixMilli(), Question: asked.Question, Approved: asked.Approved}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("policy: %w", err)
	}
	return s.seal(st, nonce)
}

func (s *StateSealer) seal(st sealedState, nonce []byte) (string, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("policy: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, []byte(sealAD))), nil
}

// Read checks that state was sealed by a replica sharing the secret, for
// this very call, and has not expired, and returns what it says was asked.
// Its errors wrap ErrStateInvalid, ErrStateExpired or ErrStateMismatch.
func (s *StateSealer) Read(state string, call tool.Call) (Asked, error) {
	st, err := s.read(state, call)
	return Asked{Question: st.Question, Approved: st.Approved}, err
}

// Open is Read, and uses the state up in once: its errors also wrap
// ErrStateUsed, or are once's (the store cannot be reached: the state is
// not used up, and not accepted).
func (s *StateSealer) Open(ctx context.Context, state string, call tool.Call, once OnceStore) (Asked, error) {
	st, err := s.read(state, call)
	if err != nil {
		return Asked{}, err
	}
	first, err := once.First(ctx, st.ID, max(time.UnixMilli(st.Expires).Sub(s.now()), time.Millisecond))
	switch {
	case err != nil:
		return Asked{}, fmt.Errorf("policy: the approval state store: %w", err)
	case !first:
		return Asked{}, ErrStateUsed
	}
	return Asked{Question: st.Question, Approved: st.Approved}, nil
}

func (s *StateSealer) read(state string, call tool.Call) (sealedState, error) {
	var st sealedState
	if len(state) > maxState {
		return st, ErrStateInvalid
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(state)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() || base64.RawURLEncoding.EncodeToString(raw) != state {
		return st, ErrStateInvalid
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], []byte(sealAD))
	if err != nil {
		return st, ErrStateInvalid
	}
	if err := json.Unmarshal(plain, &st); err != nil || st.ID == "" {
		return sealedState{}, ErrStateInvalid
	}
	switch {
	case !time.UnixMilli(st.Expires).After(s.now()):
		return st, ErrStateExpired
	case st.Principal != call.Principal || st.Tool != call.Name || st.Args != argsDigest(call.Args):
		return st, ErrStateMismatch
	}
	return st, nil
}

// argsDigest is the hex SHA-256 of the arguments in canonical JSON.
func argsDigest(args json.RawMessage) string {
	sum := sha256.Sum256([]byte(canonicalJSON(args)))
	return hex.EncodeToString(sum[:])
}

// OnceStore remembers ids for a while: First reports whether id is new,
// and remembers it for ttl. Several replicas share one (the store
// package's RedisOnce: SET NX); MemoryOnce serves one process.
type OnceStore interface {
	First(ctx context.Context, id string, ttl time.Duration) (bool, error)
}

// MemoryOnce is a OnceStore in this process. The zero value is ready.
type MemoryOnce struct {
	mu   sync.Mutex
	seen map[string]time.Time // id → until
}

// First implements OnceStore.
func (m *MemoryOnce) First(_ context.Context, id string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if until, ok := m.seen[id]; ok && now.Before(until) {
		return false, nil
	}
	if m.seen == nil {
		m.seen = map[string]time.Time{}
	}
	for k, until := range m.seen {
		if !now.Before(until) {
			delete(m.seen, k)
		}
	}
	m.seen[id] = now.Add(ttl)
	return true, nil
}
