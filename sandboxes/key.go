package sandboxes

import "context"

// Key names whose sandbox an Ensure is for, so that a backend can label
// what it makes: the Hash of the principal and of the conversation, never
// the names themselves.
type Key struct{ Principal, Conversation string }

type keyCtx struct{}

// WithKey is ctx carrying k, for a Backend's Ensure.
func WithKey(ctx context.Context, k Key) context.Context {
	return context.WithValue(ctx, keyCtx{}, k)
}

// KeyFrom is the Key ctx carries, if any.
func KeyFrom(ctx context.Context) (Key, bool) {
	k, ok := ctx.Value(keyCtx{}).(Key)
	return k, ok
}
