package auth

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzBearerToken checks the header parser and the verifier on untrusted
// input: no panic, a token is only ever the one token68 after "Bearer ",
// and nothing unsigned gets in.
func FuzzBearerToken(f *testing.F) {
	key := newSigner(f, "ecdsa", "k")
	p := newIDP(f, key)
	clk := &clock{t: time.Now()}
	a := newAuth(f, jwtConfig(p.srv.URL), clk)
	good := key.sign(f, goodClaims(clk.now()))
	for _, s := range []string{"Bearer " + good, "bearer abc", "Bearer", "Bearer  x", "Basic x", "Bearer a=b", "Bearer ab==", "Bearer \x00", "Bearer " + tamper(good),
		"Bearer " + unsigned(goodClaims(clk.now()), "none", "k"), "Bearer e30.e30.", "Bearer ...."} {
		f.Add(s, "")
	}
	f.Add("", "access_token=x")
	f.Fuzz(func(t *testing.T, header, query string) {
		req := httptest.NewRequest("GET", "http://h/mcp", nil)
		req.URL.RawQuery = query
		req.Header["Authorization"] = []string{header}
		tok, problem := BearerToken(req)
		if tok != "" {
			if problem != "" || !token68(tok) || !strings.EqualFold(header[:7], "bearer ") || header[7:] != tok {
				t.Fatalf("header %q gave token %q (problem %q)", header, tok, problem)
			}
		}
		if id, err := a.Verify(context.Background(), tok); err == nil && tok != good {
			t.Fatalf("%q verified as %+v", tok, id)
		}
	})
}
