package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"time"
)

// ErrorType classifies a failed call so that a model (and code) can react.
type ErrorType string

const (
	InvalidArguments ErrorType = "invalid_arguments" // the arguments are malformed or break the schema
	UnknownTool      ErrorType = "unknown_tool"      // no tool has that name
	PermissionDenied ErrorType = "permission_denied" // policy forbids the call
	ApprovalDenied   ErrorType = "approval_denied"   // a human (or approver) said no, or did not answer
	RateLimited      ErrorType = "rate_limited"      // too many calls: wait RetryAfter
	LoopDetected     ErrorType = "loop_detected"     // the same call again and again
	CircuitOpen      ErrorType = "circuit_open"      // refusals in a row: calls that change things stop until a cool-down
	NotFound         ErrorType = "not_found"         // the thing the call names does not exist
	Conflict         ErrorType = "conflict"          // the state is not what the call assumed
	Timeout          ErrorType = "timeout"           // the call ran out of time
	TooLarge         ErrorType = "too_large"         // an input or output is over a size limit
	Unavailable      ErrorType = "unavailable"       // a dependency (network, upstream server) is down
	SandboxViolation ErrorType = "sandbox_violation" // the sandbox stopped something the command tried
	Internal         ErrorType = "internal"          // a bug or unexpected failure inside the tool
	// InputRequired: the call waits for its client's user to answer a
	// question (an approval); the client calls again with the answer (MCP
	// input requests, protocol 2026-07-28). Never shown to a model.
	InputRequired ErrorType = "input_required"
	// AuthRequired: an upstream server needs the caller to sign in (or to
	// sign in again for more permissions); Suggestion says how.
	AuthRequired ErrorType = "auth_required"
)

// Error is a failed call, told so that a model can act on it:
// what happened (Type, Message), and what to do next (Suggestion, Retryable,
// RetryAfter). Details carries machine-readable facts (e.g. the failing
// fields of a validation error).
type Error struct {
	Type       ErrorType
	Message    string
	Retryable  bool
	RetryAfter time.Duration
	Suggestion string
	Details    map[string]any
	cause      error
}

// Errorf returns an Error of type t with a formatted message. A %w verb
// records the wrapped error as the cause (see Unwrap).
func Errorf(t ErrorType, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	e := &Error{Type: t, Message: err.Error()}
	e.cause = errors.Unwrap(err)
	return e
}

// WithSuggestion sets what the model should do next and returns e.
func (e *Error) WithSuggestion(format string, args ...any) *Error {
	e.Suggestion = fmt.Sprintf(format, args...)
	return e
}

// WithDetail records a machine-readable detail and returns e.
func (e *Error) WithDetail(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// WithRetry marks e retryable after d (0: at once) and returns e.
func (e *Error) WithRetry(d time.Duration) *Error {
	e.Retryable, e.RetryAfter = true, d
	return e
}

func (e *Error) Error() string { return string(e.Type) + ": " + e.Message }

// Unwrap returns the Go error that caused e, if any.
func (e *Error) Unwrap() error { return e.cause }

// Text is the one model-facing rendering of e: what happened, why, and what
// to do next. Every surface (CLI, MCP, provider adapters) shows this text.
func (e *Error) Text() string {
	var b strings.Builder
	b.WriteString("Error [")
	b.WriteString(string(e.Type))
	b.WriteString("]: ")
	b.WriteString(e.Message)
	if e.Suggestion != "" {
		b.WriteString("\nWhat to do: ")
		b.WriteString(e.Suggestion)
	}
	switch {
	case e.Retryable && e.RetryAfter > 0:
		fmt.Fprintf(&b, "\nRetry: yes, after %s.", e.RetryAfter.Round(time.Millisecond))
	case e.Retryable:
		b.WriteString("\nRetry: yes.")
	default:
		b.WriteString("\nRetry: not with the same arguments.")
	}
	return b.String()
}

type wireError struct {
	Type       ErrorType      `json:"type"`
	Message    string         `json:"message"`
	Retryable  bool           `json:"retryable"`
	RetryAfter *float64       `json:"retry_after,omitempty"` // seconds
	Suggestion string         `json:"suggestion,omitempty"`
	Details    map[string]any `json:"details,omitempty"`
}

// MarshalJSON writes {"type","message","retryable","retry_after"(seconds),"suggestion","details"}.
func (e *Error) MarshalJSON() ([]byte, error) {
	w := wireError{Type: e.Type, Message: e.Message, Retryable: e.Retryable, Suggestion: e.Suggestion, Details: e.Details}
	if e.RetryAfter > 0 {
		s := math.Round(e.RetryAfter.Seconds()*1000) / 1000
		w.RetryAfter = &s
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (e *Error) UnmarshalJSON(b []byte) error {
	var w wireError
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Error{Type: w.Type, Message: w.Message, Retryable: w.Retryable, Suggestion: w.Suggestion, Details: w.Details}
	if w.RetryAfter != nil {
		e.RetryAfter = time.Duration(*w.RetryAfter * float64(time.Second))
	}
	return nil
}

// AsError turns any Go error into an Error: an *Error (anywhere in the chain)
// is returned as it is; well-known causes get their type (a missing file is
// not_found, a deadline is timeout, …); anything else is internal.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	out := &Error{Type: Internal, Message: err.Error(), cause: err}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		out.Type, out.Retryable = Timeout, true
		out.Suggestion = "the call ran out of time; retry with a smaller request or a longer timeout"
	case errors.Is(err, context.Canceled):
		out.Type, out.Message = Timeout, "the call was cancelled: "+err.Error()
	case errors.Is(err, fs.ErrNotExist):
		out.Type = NotFound
	case errors.Is(err, fs.ErrPermission):
		out.Type = PermissionDenied
	case errors.Is(err, fs.ErrExist):
		out.Type = Conflict
	}
	return out
}
