// Package egresstest provides what tests of network policy need and cannot
// fake: a real DNS server on a loopback UDP port whose answers a test sets
// (and may change between lookups, as a rebinding attacker does), and a
// certificate authority for TLS servers on loopback.
package egresstest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// DNSServer is a real DNS server on a loopback UDP port. Each name has a
// sequence of answers: the n-th A (or AAAA) query gets the n-th answer (the
// last one repeats), so a test can make a name change between lookups.
type DNSServer struct {
	addr string
	pc   net.PacketConn

	mu      sync.Mutex
	answers map[string][][]netip.Addr // lower-case name without the trailing dot
	queries map[string]int            // A queries per name (any name asked)
}

func NewDNSServer(t testing.TB) *DNSServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &DNSServer{addr: pc.LocalAddr().String(), pc: pc, answers: map[string][][]netip.Addr{}, queries: map[string]int{}}
	done := make(chan struct{})
	go func() { defer close(done); s.serve() }()
	t.Cleanup(func() { pc.Close(); <-done })
	return s
}

// Set gives name a sequence of answers, each a comma-separated address list.
func (s *DNSServer) Set(name string, answers ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var seq [][]netip.Addr
	for _, a := range answers {
		var set []netip.Addr
		for _, f := range strings.Split(a, ",") {
			if f != "" {
				set = append(set, netip.MustParseAddr(f))
			}
		}
		seq = append(seq, set)
	}
	s.answers[name] = seq
}

// Asked returns how many A queries name received.
func (s *DNSServer) Asked(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[name]
}

// AskedSuffix returns how many A queries names ending in suffix received.
func (s *DNSServer) AskedSuffix(suffix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for name, c := range s.queries {
		if strings.HasSuffix(name, suffix) {
			n += c
		}
	}
	return n
}

func (s *DNSServer) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
		s.mu.Lock()
		seq, known := s.answers[name]
		var set []netip.Addr
		if q.Type == dnsmessage.TypeA {
			if known {
				set = seq[min(s.queries[name], len(seq)-1)]
			}
			s.queries[name]++
		} else if known {
			set = seq[min(max(s.queries[name]-1, 0), len(seq)-1)]
		}
		s.mu.Unlock()
		rcode := dnsmessage.RCodeSuccess
		if !known {
			rcode = dnsmessage.RCodeNameError
		}
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true,
			RecursionDesired: h.RecursionDesired, RecursionAvailable: true, RCode: rcode})
		b.EnableCompression()
		b.StartQuestions()
		b.Question(q)
		b.StartAnswers()
		for _, a := range set {
			rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
			switch {
			case q.Type == dnsmessage.TypeA && a.Is4():
				b.AResource(rh, dnsmessage.AResource{A: a.As4()})
			case q.Type == dnsmessage.TypeAAAA && a.Is6():
				b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()})
			}
		}
		msg, err := b.Finish()
		if err != nil {
			continue
		}
		s.pc.WriteTo(msg, from)
	}
}

// Resolver is a real Go resolver that asks only this server.
func (s *DNSServer) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.addr)
	}}
}

// CA is a test certificate authority (Pool for Go clients, PEM for other
// programs: curl --cacert, SSL_CERT_FILE) and a server certificate it
// signed (Cert, for servers).
type CA struct {
	Pool *x509.CertPool
	PEM  []byte
	Cert tls.Certificate
}

// NewCA makes a CA and a server certificate for names.
func NewCA(t testing.TB, names ...string) CA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "toolgate test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return CA{Pool: pool, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		Cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}}
}

// Routes is a PolicyConfig.Dial for tests: it connects each address it maps
// ("93.184.215.14:443", a public-looking address a DNSServer gives out) to a
// server on loopback ("127.0.0.1:41234"), and refuses every other address,
// so that a test reaches its own servers with the policy's address checks
// unchanged (loopback stays refused for every name) and never the Internet.
type Routes map[string]string

// Dial connects to the server r maps addr to.
func (r Routes) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	to, ok := r[addr]
	if !ok {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("egresstest: no route to %s", addr)}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, to)
}
