//go:build !unix

package egress

import "net"

// socketPair returns the two ends of an in-memory pipe (no half-close).
func socketPair() (net.Conn, net.Conn, error) {
	a, b := net.Pipe()
	return a, b, nil
}
