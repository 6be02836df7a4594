//go:build !unix

package runner

import "net"

// awaitClose says at once that nc's close cannot be awaited without
// reading it here (no MSG_PEEK: not peeked): a lean call is not cancelled
// by its caller's close.
func awaitClose(net.Conn) (peeked, closed bool, err error) { return false, false, nil }

// waiting says that nc's unread bytes cannot be seen here.
func waiting(net.Conn) bool { return false }
