package egress

import (
	"errors"
	"fmt"
	"io"
)

const (
	recordHandshake   = 22
	msgClientHello    = 1
	extServerName     = 0
	maxRecordLen      = 1<<14 + 256 // a plaintext record, with some slack for odd clients
	maxClientHelloLen = 1 << 16     // far above any real ClientHello (post-quantum ones are ~2 KiB)
)

var errNotTLS = errors.New("the tunnel does not start with a TLS handshake record")

// readClientHello reads TLS records from r until it holds a whole
// ClientHello, and returns every byte it read (to be forwarded unchanged)
// with the server name the hello carries ("" and false when it has none).
func readClientHello(r io.Reader) (raw []byte, sni string, ok bool, err error) {
	var msg []byte // the handshake bytes gathered from the records' payloads
	for {
		var hdr [5]byte
		if got, err := io.ReadFull(r, hdr[:]); err != nil {
			raw = append(raw, hdr[:got]...)
			if len(raw) == 0 && errors.Is(err, io.EOF) {
				return raw, "", false, fmt.Errorf("%w: the client sent nothing", errNotTLS)
			}
			return raw, "", false, fmt.Errorf("reading a TLS record: %w", err)
		}
		raw = append(raw, hdr[:]...)
		if hdr[0] != recordHandshake || hdr[1] != 3 {
			return raw, "", false, errNotTLS
		}
		n := int(hdr[3])<<8 | int(hdr[4])
		if n == 0 || n > maxRecordLen {
			return raw, "", false, fmt.Errorf("TLS record of %d bytes", n)
		}
		start := len(raw)
		raw = append(raw, make([]byte, n)...)
		if got, err := io.ReadFull(r, raw[start:]); err != nil {
			return raw[:start+got], "", false, fmt.Errorf("reading a TLS record: %w", err)
		}
		msg = append(msg, raw[start:]...)
		if len(msg) < 4 {
			continue
		}
		if msg[0] != msgClientHello {
			return raw, "", false, fmt.Errorf("the first handshake message is of type %d, not a ClientHello", msg[0])
		}
		size := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
		if size > maxClientHelloLen {
			return raw, "", false, fmt.Errorf("a ClientHello of %d bytes", size)
		}
		if len(msg) < 4+size {
			continue
		}
		sni, ok, err := parseClientHello(msg[4 : 4+size])
		return raw, sni, ok, err
	}
}

// reader reads big-endian fields from a byte slice; any overrun sets bad.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) bytes(n int) []byte {
	if r.bad || n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() int {
	b := r.bytes(1)
	if b == nil {
		return 0
	}
	return int(b[0])
}

func (r *reader) u16() int {
	b := r.bytes(2)
	if b == nil {
		return 0
	}
	return int(b[0])<<8 | int(b[1])
}

// parseClientHello finds the host_name of the server_name extension in a
// ClientHello body (RFC 8446 §4.1.2, RFC 6066 §3). It refuses malformed
// hellos, repeated extensions and more than one host name.
func parseClientHello(body []byte) (sni string, ok bool, err error) {
	r := &reader{b: body}
	r.bytes(2 + 32)   // legacy_version, random
	r.bytes(r.u8())   // legacy_session_id
	suites := r.u16() // cipher_suites
	if suites < 2 || suites%2 != 0 {
		return "", false, errors.New("malformed ClientHello: cipher suites")
	}
	r.bytes(suites)
	if n := r.u8(); n < 1 { // legacy_compression_methods
		return "", false, errors.New("malformed ClientHello: compression methods")
	} else {
		r.bytes(n)
	}
	if r.bad {
		return "", false, errors.New("malformed ClientHello: truncated")
	}
	if len(r.b) == 0 {
		return "", false, nil // no extensions at all
	}
	exts := &reader{b: r.bytes(r.u16())}
	if r.bad || len(r.b) != 0 {
		return "", false, errors.New("malformed ClientHello: extensions length")
	}
	seen := map[int]bool{}
	for len(exts.b) > 0 {
		typ := exts.u16()
		data := exts.bytes(exts.u16())
		if exts.bad {
			return "", false, errors.New("malformed ClientHello: an extension is truncated")
		}
		if seen[typ] {
			return "", false, fmt.Errorf("malformed ClientHello: extension %d repeated", typ)
		}
		seen[typ] = true
		if typ != extServerName {
			continue
		}
		d := &reader{b: data}
		list := &reader{b: d.bytes(d.u16())}
		if d.bad || len(d.b) != 0 || len(list.b) == 0 {
			return "", false, errors.New("malformed ClientHello: server_name list")
		}
		for len(list.b) > 0 {
			nameType := list.u8()
			name := list.bytes(list.u16())
			if list.bad || len(name) == 0 {
				return "", false, errors.New("malformed ClientHello: server name")
			}
			if nameType != 0 {
				continue
			}
			if ok {
				return "", false, errors.New("malformed ClientHello: two host names")
			}
			sni, ok = string(name), true
		}
	}
	return sni, ok, nil
}
