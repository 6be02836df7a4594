package egress

import (
	"bytes"
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// realHello returns the first flight of a real crypto/tls client.
func realHello(t testing.TB, serverName string) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		c := tls.Client(a, &tls.Config{ServerName: serverName, InsecureSkipVerify: true})
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Handshake()
	}()
	b.SetDeadline(time.Now().Add(5 * time.Second))
	raw, _, _, err := readClientHello(b)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// fragment re-frames a one-record ClientHello as records of at most n bytes.
func fragment(raw []byte, n int) []byte {
	payload := raw[5:]
	var out []byte
	for len(payload) > 0 {
		k := min(n, len(payload))
		out = append(out, 22, 3, 1, byte(k>>8), byte(k))
		out = append(out, payload[:k]...)
		payload = payload[k:]
	}
	return out
}

func TestReadClientHello(t *testing.T) {
	raw := realHello(t, "api.example.com")
	for _, n := range []int{1 << 14, 100, 7, 1} {
		in := fragment(raw, n)
		got, sni, ok, err := readClientHello(bytes.NewReader(append(in, "trailing"...)))
		if err != nil || !ok || sni != "api.example.com" {
			t.Errorf("records of %d: %q %v %v", n, sni, ok, err)
		}
		if !bytes.Equal(got, in) {
			t.Errorf("records of %d: the bytes to forward differ from the bytes read", n)
		}
	}
	if _, _, ok, err := readClientHello(bytes.NewReader(realHello(t, ""))); err != nil || ok {
		t.Errorf("a hello without a server name: ok=%v err=%v", ok, err)
	}
	bad := map[string][]byte{
		"empty":         {},
		"plain HTTP":    []byte("GET / HTTP/1.1\r\n\r\n"),
		"SSLv2":         {0x80, 0x2e, 0x01, 0x03, 0x01},
		"alert record":  {21, 3, 3, 0, 2, 2, 40},
		"zero record":   {22, 3, 1, 0, 0},
		"huge record":   {22, 3, 1, 0xff, 0xff},
		"server hello":  {22, 3, 3, 0, 4, 2, 0, 0, 0},
		"huge hello":    {22, 3, 3, 0, 4, 1, 0xff, 0xff, 0xff},
		"truncated":     raw[:len(raw)-3],
		"short payload": {22, 3, 3, 0, 4, 1, 0, 0, 2},
	}
	for name, in := range bad {
		if _, _, _, err := readClientHello(bytes.NewReader(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseClientHelloTricks(t *testing.T) {
	// body: version, random, session id, suites, compression, extensions
	hello := func(exts ...[]byte) []byte {
		b := append([]byte{3, 3}, make([]byte, 32)...)
		b = append(b, 0, 0, 2, 0x13, 0x01, 1, 0)
		var all []byte
		for _, e := range exts {
			all = append(all, e...)
		}
		return append(append(b, byte(len(all)>>8), byte(len(all))), all...)
	}
	sniExt := func(names ...string) []byte {
		var list []byte
		for _, n := range names {
			list = append(list, 0, byte(len(n)>>8), byte(len(n)))
			list = append(list, n...)
		}
		data := append([]byte{byte(len(list) >> 8), byte(len(list))}, list...)
		return append([]byte{0, 0, byte(len(data) >> 8), byte(len(data))}, data...)
	}
	if sni, ok, err := parseClientHello(hello(sniExt("a.test"))); err != nil || !ok || sni != "a.test" {
		t.Errorf("one name: %q %v %v", sni, ok, err)
	}
	for name, body := range map[string][]byte{
		"two names":          hello(sniExt("a.test", "b.test")),
		"repeated extension": hello(sniExt("a.test"), sniExt("b.test")),
		"empty name":         hello(sniExt("")),
		"empty list":         hello([]byte{0, 0, 0, 2, 0, 0}),
		"overlong ext":       hello([]byte{0, 0, 0, 9, 0, 0}),
		"odd suites":         append(append([]byte{3, 3}, make([]byte, 32)...), 0, 0, 3, 1, 2, 3, 1, 0),
	} {
		if _, _, err := parseClientHello(body); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzClientHello(f *testing.F) {
	raw := realHello(f, "api.example.com")
	f.Add(raw)
	f.Add(fragment(raw, 50))
	f.Add(realHello(f, ""))
	f.Add([]byte{22, 3, 1, 0, 4, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		got, sni, ok, err := readClientHello(bytes.NewReader(in))
		if !bytes.HasPrefix(in, got) {
			t.Fatal("the bytes to forward are not a prefix of the input")
		}
		if err == nil && ok && len(sni) == 0 {
			t.Fatal("an empty server name was accepted")
		}
		if !ok && sni != "" {
			t.Fatal("a name without ok")
		}
	})
}
