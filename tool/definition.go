package tool

import (
	"context"
	"encoding/json"
	"fmt"
)

// Level is how much harm a tool can do, and so how much permission it needs.
type Level int

const (
	LevelRead   Level = 0 // reads only: runs automatically
	LevelWrite  Level = 1 // low-risk writes inside the workspace: runs and is logged
	LevelMedium Level = 2 // commands, network, upstream tools: asks by default
	LevelHigh   Level = 3 // destructive or irreversible: asks with an explicit confirmation
)

func (l Level) String() string {
	switch l {
	case LevelRead:
		return "read"
	case LevelWrite:
		return "write"
	case LevelMedium:
		return "medium"
	case LevelHigh:
		return "high"
	}
	return fmt.Sprintf("level(%d)", int(l))
}

// Valid reports whether l is one of the four levels.
func (l Level) Valid() bool { return l >= LevelRead && l <= LevelHigh }

// Annotations are hints about a tool's behaviour, with MCP's meaning.
// Unlike MCP, every field here is explicit: the zero value claims nothing
// destructive and nothing open-world, so set them truthfully.
type Annotations struct {
	ReadOnly    bool `json:"readOnlyHint"`    // does not modify its environment
	Destructive bool `json:"destructiveHint"` // may delete or overwrite data
	Idempotent  bool `json:"idempotentHint"`  // repeating a call with the same arguments has no further effect
	OpenWorld   bool `json:"openWorldHint"`   // reaches outside the local workspace (network, other systems)
}

// Definition is what a model (or an MCP client) is told about a tool.
type Definition struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`            // JSON Schema 2020-12, type object
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"` // JSON Schema 2020-12 of Result.Structured
	Annotations  Annotations     `json:"annotations"`
	Level        Level           `json:"level"`
	Tags         []string        `json:"tags,omitempty"` // tool sets and groups
}

// HasTag reports whether d carries tag.
func (d Definition) HasTag(tag string) bool {
	for _, t := range d.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// Tool is something a model can call.
//
// Run receives arguments that the engine has already parsed, repaired and
// validated against Definition().InputSchema. A returned Go error becomes a
// Result carrying an Error (see AsError); it never ends the caller's run.
type Tool interface {
	Definition() Definition
	Run(ctx context.Context, call Call) (Result, error)
}

// Call is one invocation a model (or client) asked for.
type Call struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"arguments,omitempty"` // raw JSON as received; the engine may replace it with repaired arguments
	Principal string          `json:"principal,omitempty"` // who is calling: a user, role or client name
	Session   string          `json:"session,omitempty"`
	// IdempotencyKey, when set, makes a retry of this call (same tool, same
	// key) return the first attempt's result instead of running again.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Auth is how the caller proved it is Principal (set by a transport
	// that authenticates, e.g. package auth over HTTP); nil: a local caller
	// (the CLI, stdio), named by its environment.
	Auth *Credential `json:"auth,omitempty"`
}

// Caller identifies who calls in which session, for what is counted per
// caller (loop guard, denial breaker, idempotency keys): the principal and
// the session, so that neither a shared session id nor a shared name mixes
// two callers.
func (c Call) Caller() string { return c.Principal + "\x00" + c.Session }

// Credential kinds.
const (
	CredentialJWT    = "jwt"
	CredentialAPIKey = "api_key"
	CredentialLocal  = "local"
)

// Credential is a verified credential: who vouches for the principal.
type Credential struct {
	Kind   string `json:"kind"`             // CredentialJWT or CredentialAPIKey
	Issuer string `json:"issuer,omitempty"` // jwt: the token's iss
	JTI    string `json:"jti,omitempty"`    // jwt: the token's jti
	Key    string `json:"key,omitempty"`    // api_key: the first 8 hex digits of the key's SHA-256
	// Roles are the roles the credential grants (a token's roles claim, an
	// API key's roles); the policy uses the first one it defines.
	Roles []string `json:"-"`
	// Scopes are the token's scopes.
	Scopes []string `json:"-"`
}

// CredentialKey is the key under which a transport's token information
// (the go-sdk's auth.TokenInfo.Extra) carries the caller's *Credential.
const CredentialKey = "toolgate/credential"
