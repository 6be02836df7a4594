package web

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/sandbox/egress"
)

// FuzzArgs: argument checking never panics, and what it accepts is an
// absolute http(s) URL without credentials, a known method, and headers
// that cannot split a request or set what the tool owns.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{`{"url":"https://a.example.com/"}`, `{"url":"http://user@x/"}`,
		`{"url":"https://a.example.com/","method":"post","headers":{"X":"y"},"body":"b"}`,
		`{"url":"https://a.example.com/","headers":{"Host":"evil"}}`, `{"url":"//x"}`, `{"url":"HTTP://A.EXAMPLE.COM"}`} {
		f.Add([]byte(s))
	}
	pol, err := egress.NewPolicy(egress.PolicyConfig{Allow: []string{"*.example.com"}})
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(Options{Policy: pol})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, u, h, te := s.parseArgs(json.RawMessage(raw))
		if te != nil {
			if te.Suggestion == "" {
				t.Fatalf("%q: an error without a suggestion: %s", raw, te.Text())
			}
			return
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			t.Fatalf("%q: accepted %s", raw, u)
		}
		if _, err := url.Parse(u.String()); err != nil {
			t.Fatalf("%q: the URL does not re-parse: %v", raw, err)
		}
		if !strings.Contains("GET HEAD POST PUT PATCH DELETE OPTIONS", in.Method) || in.Method == "" {
			t.Fatalf("%q: method %q", raw, in.Method)
		}
		for k, vs := range h {
			for _, b := range []string{"Host", "Content-Length", "Transfer-Encoding", "Connection"} {
				if k == b {
					t.Fatalf("%q: header %s accepted", raw, k)
				}
			}
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n\x00") {
					t.Fatalf("%q: header %s value %q", raw, k, v)
				}
			}
		}
	})
}
