// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

// PATCH(toolgate): patch 28's tests.

package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/internal/util"
)

// TestReadBodyMatchesReadAll: readBody gives io.ReadAll's bytes and error
// for bodies of many lengths, announced exactly, short, long, not at all
// and far beyond them, read whole, a byte or 7 bytes at a time, cut by an
// error, and through http.MaxBytesReader below and above its limit.
func TestReadBodyMatchesReadAll(t *testing.T) {
	errCut := errors.New("cut")
	readers := map[string]func(b []byte) io.Reader{
		"whole":   func(b []byte) io.Reader { return bytes.NewReader(b) },
		"byte":    func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
		"seven":   func(b []byte) io.Reader { return &sevenReader{r: bytes.NewReader(b), n: 7} },
		"dataeof": func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
		"cut": func(b []byte) io.Reader {
			return io.MultiReader(bytes.NewReader(b[:len(b)/2]), iotest.ErrReader(errCut))
		},
		"maxbytes": func(b []byte) io.Reader {
			return http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(bytes.NewReader(b)), 100)
		},
	}
	n := 0
	for _, size := range []int{0, 1, 2, 99, 100, 101, 120, 511, 512, 513, firstPresized - 1, firstPresized, firstPresized + 1, 3 * firstPresized, 64 << 10, 200000} {
		body := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		for _, announced := range []int64{-1, 0, int64(size), int64(size) - 1, int64(size) + 1, int64(size) / 2, int64(size) * 2, firstPresized, firstPresized + 1, 64 << 10, math.MaxInt64} {
			for name, mk := range readers {
				want, wantErr := io.ReadAll(mk(body))
				got, gotErr := readBody(mk(body), announced)
				if !bytes.Equal(got, want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Errorf("size %d, announced %d, %s: got %d bytes, %v; want %d bytes, %v", size, announced, name, len(got), gotErr, len(want), wantErr)
				}
				var mbe *http.MaxBytesError
				if errors.As(gotErr, &mbe) != errors.As(wantErr, &mbe) {
					t.Errorf("size %d, announced %d, %s: MaxBytesError %v, want %v", size, announced, name, gotErr, wantErr)
				}
				n++
			}
		}
	}
	if n < 500 {
		t.Fatalf("only %d cases", n)
	}
}

// TestReadBodyBounded: whatever Content-Length a client announces, readBody
// offers its first Read no more than firstPresized bytes, and its buffer
// is never larger than firstPresized or four times the bytes sent: a client
// that announces 64 KiB, or 2^63-1 bytes, and sends a few holds no more
// than a small body's buffer (before, 64 KiB).
func TestReadBodyBounded(t *testing.T) {
	n := 0
	for _, size := range []int{0, 1, 150, firstPresized - 1, firstPresized, firstPresized + 1, 10000, 64 << 10, 300000} {
		body := bytes.Repeat([]byte("x"), size)
		for _, announced := range []int64{1, 150, firstPresized, 64 << 10, 64<<10 + 1, 4 << 20, math.MaxInt64} {
			if announced < int64(size) {
				continue
			}
			r := &firstReadSize{r: bytes.NewReader(body)}
			got, err := readBody(r, announced)
			if err != nil || len(got) != size {
				t.Fatalf("size %d, announced %d: %d bytes, %v", size, announced, len(got), err)
			}
			if r.first > firstPresized {
				t.Errorf("size %d, announced %d: the first Read was offered %d bytes, want at most %d", size, announced, r.first, firstPresized)
			}
			if limit := max(firstPresized, 4*size); cap(got) > limit {
				t.Errorf("size %d, announced %d: a buffer of %d bytes, want at most %d", size, announced, cap(got), limit)
			}
			if announced == int64(size) && size < firstPresized && cap(got) != size+1 {
				t.Errorf("size %d, announced exactly: a buffer of %d bytes, want %d", size, cap(got), size+1)
			}
			n++
		}
	}
	if n < 30 {
		t.Fatalf("only %d cases", n)
	}
}

// BenchmarkReadBody: a POST's body read by readBody and by io.ReadAll
// (v1.8.0's), at sizes of a tools/call without arguments (150 bytes) to
// one carrying a file (100 KB), announced exactly, read at most 4 KiB at a
// time (as net/http's body gives a buffered connection's bytes); "lie" is
// a client announcing 64 KiB that sends 150 bytes:
//
//	go test -run '^$' -bench BenchmarkReadBody -benchmem ./mcp/
func BenchmarkReadBody(b *testing.B) {
	for _, c := range []struct {
		name      string
		size      int
		announced int64
	}{{"150", 150, 150}, {"1K", 1000, 1000}, {"8K", 8000, 8000}, {"20K", 20000, 20000}, {"100K", 100000, 100000}, {"lie", 150, 64 << 10}} {
		body := bytes.Repeat([]byte("x"), c.size)
		for _, f := range []struct {
			name string
			read func(io.Reader, int64) ([]byte, error)
		}{{"readBody", readBody}, {"ReadAll", func(r io.Reader, _ int64) ([]byte, error) { return io.ReadAll(r) }}} {
			b.Run(c.name+"/"+f.name, func(b *testing.B) {
				r := bytes.NewReader(body)
				chunks := &sevenReader{r: r, n: 4 << 10}
				b.ReportAllocs()
				for b.Loop() {
					r.Reset(body)
					if got, err := f.read(chunks, c.announced); err != nil || len(got) != c.size {
						b.Fatal(len(got), err)
					}
				}
			})
		}
	}
}

// firstReadSize notes how many bytes its first Read is offered.
type firstReadSize struct {
	r     io.Reader
	first int
	reads int
}

func (f *firstReadSize) Read(p []byte) (int, error) {
	if f.reads++; f.reads == 1 {
		f.first = len(p)
	}
	return f.r.Read(p)
}

type sevenReader struct {
	r io.Reader
	n int
}

func (c *sevenReader) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

// TestAcceptFastPath: the common Accept header gets the answers the loops
// give it (a second, empty value makes them run).
func TestAcceptFastPath(t *testing.T) {
	fastJSON, fastStream := streamableAccepts([]string{commonAccept})
	loopJSON, loopStream := streamableAccepts([]string{commonAccept, ""})
	if fastJSON != loopJSON || fastStream != loopStream || !loopJSON || !loopStream {
		t.Errorf("streamableAccepts: fast %v %v, loop %v %v", fastJSON, fastStream, loopJSON, loopStream)
	}
	if fast, loop := jsonAccepted([]string{commonAccept}), jsonAccepted([]string{commonAccept, ""}); fast != loop || !loop {
		t.Errorf("jsonAccepted: fast %v, loop %v", fast, loop)
	}
	mt, _, err := mime.ParseMediaType("application/json")
	if got := baseMediaType("application/json"); err != nil || got != mt {
		t.Errorf("baseMediaType: %q, ParseMediaType %q %v", got, mt, err)
	}
}

// TestHeaderKeysCanonical: the keys read and written by index are those
// net/http keeps them under, and headerValue is Get for them.
func TestHeaderKeysCanonical(t *testing.T) {
	if lastEventIDKey != http.CanonicalHeaderKey(lastEventIDHeader) {
		t.Errorf("lastEventIDKey %q, canonical %q", lastEventIDKey, http.CanonicalHeaderKey(lastEventIDHeader))
	}
	h := http.Header{}
	h.Add("mcp-protocol-version", "2025-06-18")
	h.Add("MCP-SESSION-ID", "s1")
	h.Add("MCP-SESSION-ID", "s2")
	h.Add("content-type", "application/json")
	h.Add("last-event-id", "x")
	h.Add("accept", "a")
	h.Add("Accept", "b")
	for _, k := range []string{protocolVersionHeader, sessionIDHeader, "Content-Type", "Accept", lastEventIDKey, "Cache-Control", "Connection", "Content-Length", "Origin"} {
		if c := http.CanonicalHeaderKey(k); c != k {
			t.Errorf("%q is not canonical (%q)", k, c)
		}
		if got, want := headerValue(h, k), h.Get(k); got != want {
			t.Errorf("headerValue(%q) = %q, Get %q", k, got, want)
		}
		if got, want := h[k], h.Values(k); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("h[%q] = %q, Values %q", k, got, want)
		}
	}
	if headerValue(nil, "Accept") != "" {
		t.Error("headerValue of a nil header")
	}
}

// TestLocalIsLoopback: localIsLoopback is util.IsLoopback of the address
// written out, for TCP addresses of every kind and for others.
func TestLocalIsLoopback(t *testing.T) {
	var addrs []net.Addr
	for _, ip := range []string{"127.0.0.1", "127.255.0.9", "10.0.0.1", "0.0.0.0", "::1", "::", "fe80::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "2001:db8::1"} {
		for _, zone := range []string{"", "lo"} {
			addrs = append(addrs, &net.TCPAddr{IP: net.ParseIP(ip), Port: 8080, Zone: zone})
			addrs = append(addrs, &net.TCPAddr{IP: net.ParseIP(ip).To4(), Zone: zone})
		}
	}
	var nilTCP *net.TCPAddr
	addrs = append(addrs, &net.TCPAddr{}, &net.TCPAddr{IP: net.IP{1, 2, 3}}, nilTCP,
		&net.UDPAddr{IP: net.ParseIP("127.0.0.1"), Port: 1}, &net.UnixAddr{Name: "/tmp/s", Net: "unix"}, &net.UnixAddr{Name: "localhost"})
	loop := 0
	for _, a := range addrs {
		want := util.IsLoopback(a.String())
		if got := localIsLoopback(a); got != want {
			t.Errorf("%#v (%s): %v, want %v", a, a, got, want)
		}
		if want {
			loop++
		}
	}
	if loop < 8 {
		t.Errorf("only %d loopback addresses", loop)
	}
}

// TestPOSTProtocolVersion: a POST to a session is judged by its
// Mcp-Protocol-Version header, which servePOSTVersion now gets as an
// argument: a batch is refused from 2025-06-18 on and taken before, and a
// call at 2026-07-28 is refused by a stateful server (v1.8.0's answers).
func TestPOSTProtocolVersion(t *testing.T) {
	server := NewServer(testImpl, nil)
	ts := httptest.NewServer(NewStreamableHTTPHandler(func(*http.Request) *Server { return server }, nil))
	defer ts.Close()
	post := func(sid, version, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", commonAccept)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		if version != "" {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if sid == "" {
			return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
		}
		return resp.StatusCode, string(b)
	}
	_, sid := post("", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if sid == "" {
		t.Fatal("no session")
	}
	post(sid, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	batch := `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	if code, body := post(sid, "2025-06-18", batch); code != http.StatusBadRequest || !strings.Contains(body, "batching is not supported") {
		t.Errorf("batch at 2025-06-18: %d %s", code, body)
	}
	if code, body := post(sid, "2025-03-26", batch); code != http.StatusOK || !strings.Contains(body, `"id":2`) {
		t.Errorf("batch at 2025-03-26: %d %s", code, body)
	}
	if code, body := post(sid, "2026-07-28", `{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`); code != http.StatusBadRequest || !strings.Contains(body, "not supported by this server") {
		t.Errorf("call at 2026-07-28: %d %s", code, body)
	}
	if code, body := post(sid, "2025-06-18", `{"jsonrpc":"2.0","id":4,"method":"ping"}`); code != http.StatusOK || !strings.Contains(body, `"id":4`) {
		t.Errorf("ping: %d %s", code, body)
	}
}
