//go:build !unix

package runner

import "net"

// awaitClose says at once that nc's close cannot be awaited without
// reading it here (no MSG_PEEK): a lean call is not cancelled by its
// caller's close.
func awaitClose(net.Conn) (closed bool, err error) { return false, nil }

// peeks says that awaitClose cannot wait without reading here.
func peeks(net.Conn) bool { return false }

// waiting says that nc's unread bytes cannot be seen here.
func waiting(net.Conn) bool { return false }
