package sandboxes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"

	"github.com/toolgate/toolgate/runner"
)

// A Backend places sandboxes: it makes one for an id, says where it
// answers, and deletes it. Its methods may be called from several
// goroutines and, on other replicas, other processes at once.
type Backend interface {
	// Ensure makes sandbox id unless it exists (idempotent: racing
	// callers, even on two replicas, make one) and waits, bounded by ctx,
	// until it answers. It returns the URL of its MCP endpoint
	// (…/sandboxes/{id}/mcp on a runner; the gateway calls …/call beside
	// it) and whether this call created it.
	Ensure(ctx context.Context, id string) (endpoint string, created bool, err error)
	// Delete removes sandbox id; deleting one that does not exist is not
	// an error.
	Delete(ctx context.Context, id string) error
	// Count says how many sandboxes exist now (the `max` check).
	Count(ctx context.Context) (int, error)
}

// A KeptDeleter is a Backend whose deletion goes through the sandbox's
// runner (DELETE /sandboxes/{id}, DeleteOnRunner) before it removes what
// holds it: DeleteKept is Delete that also returns the process events the
// runner's answer carried (nil: none), which the reaper tells as a
// result's. Without it, events after a sandbox's last call are lost when
// the reaper deletes it.
type KeptDeleter interface {
	Backend
	DeleteKept(ctx context.Context, id string) (*runner.ProcessEvents, error)
}

// ErrUnavailable is wrapped by a Backend's errors that a later call may
// not meet (the sandbox did not answer in time, the engine placing it is
// unreachable): the tool result is `unavailable`, retryable.
var ErrUnavailable = errors.New("sandbox unavailable")

// ErrTooMany is wrapped by an error refusing a new sandbox because the
// policy's `max` sandboxes exist: the tool result is `rate_limited` with a
// retry_after.
var ErrTooMany = errors.New("too many sandboxes")

// IDPrefix starts every sandbox id (so an id never starts with a digit and
// reads as what it is in a listing of pods or folders).
const IDPrefix = "sb-"

// ID is the sandbox id of the key (principal, conversation): IDPrefix and
// the first 128 bits of SHA-256 over both (each length-prefixed, so no two
// keys share an encoding) in lower-case hex, 35 characters. It passes
// runner.ValidID and is a DNS-1123 label, so a backend may use it (or a
// prefix and it) as an object name.
func ID(principal, conversation string) string {
	return IDPrefix + Hash(strconv.Itoa(len(principal))+":"+principal+conversation)
}

// Hash is the first 128 bits of SHA-256 of s in lower-case hex (32
// characters): a Kubernetes label value naming a principal or a
// conversation without spelling it.
func Hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}
