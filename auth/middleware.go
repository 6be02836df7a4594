package auth

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolgate/toolgate/tool"
)

// ProtectedResourceMetadata is the RFC 9728 document (the go-sdk's type).
type ProtectedResourceMetadata = oauthex.ProtectedResourceMetadata

type verifiedKey struct{}

// Middleware lets through only requests with a valid credential (see the
// package doc for the answers to the others). The verified caller reaches
// next as the go-sdk's auth.TokenInfo (auth.TokenInfoFromContext).
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	// The go-sdk's middleware puts the TokenInfo where its streamable
	// handler looks for it; every check has been made before.
	inner := sdkauth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		if ti, ok := ctx.Value(verifiedKey{}).(*sdkauth.TokenInfo); ok {
			return ti, nil
		}
		return nil, ErrInvalidToken
	}, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, problem := BearerToken(r)
		switch {
		case problem != "":
			a.challenge(w, http.StatusBadRequest, "invalid_request", problem)
			return
		case token == "":
			a.challenge(w, http.StatusUnauthorized, "", "this server needs a bearer token (Authorization: Bearer …); see the resource metadata")
			return
		}
		id, err := a.Verify(r.Context(), token)
		if err != nil {
			a.challenge(w, http.StatusUnauthorized, "invalid_token", err.Error())
			return
		}
		if missing := a.missingScopes(id); len(missing) > 0 {
			a.challenge(w, http.StatusForbidden, "insufficient_scope", "the token lacks the scope "+strings.Join(missing, " "))
			return
		}
		cred := id.Credential
		ti := &sdkauth.TokenInfo{UserID: id.Principal, Scopes: cred.Scopes, Expiration: id.Expiry,
			Extra: map[string]any{tool.CredentialKey: &cred}}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), verifiedKey{}, ti)))
	})
}

// BearerToken returns the bearer token of r ("" none), or a problem that
// makes the request malformed: a token in the URL, more than one
// Authorization header, an oversized one, or a bearer token that is not
// one token68 (RFC 6750 §2.1). Another scheme (Basic) is no token.
func BearerToken(r *http.Request) (token, problem string) {
	for k := range r.URL.Query() {
		if strings.EqualFold(k, "access_token") {
			return "", "a token in the URL is refused (it ends up in logs and histories); send it in the Authorization header"
		}
	}
	vals := r.Header.Values("Authorization")
	switch {
	case len(vals) == 0:
		return "", ""
	case len(vals) > 1:
		return "", "more than one Authorization header"
	case len(vals[0]) > maxTokenBytes:
		return "", fmt.Sprintf("the Authorization header is larger than %d bytes", maxTokenBytes)
	}
	scheme, rest, _ := strings.Cut(vals[0], " ")
	if !strings.EqualFold(scheme, "bearer") {
		return "", ""
	}
	if !token68(rest) {
		return "", "the Authorization header is not \"Bearer\", one space and one token of letters, digits and -._~+/ (then = padding)"
	}
	return rest, ""
}

// token68 reports whether s is b64token = 1*( ALPHA / DIGIT / "-" / "." /
// "_" / "~" / "+" / "/" ) *"=".
func token68(s string) bool {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0 {
			i++
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// challenge answers with a WWW-Authenticate: Bearer challenge naming the
// resource metadata, the scopes, and the error when there is one.
func (a *Authenticator) challenge(w http.ResponseWriter, status int, code, desc string) {
	params := []string{fmt.Sprintf("resource_metadata=%q", a.meta)}
	if len(a.cfg.Scopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(a.cfg.Scopes, " ")))
	}
	if code != "" {
		params = append(params, fmt.Sprintf("error=%q", code), fmt.Sprintf("error_description=%q", quotable(desc)))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	http.Error(w, http.StatusText(status)+": "+desc, status)
}

// quotable keeps the printable ASCII of s other than quotes and
// backslashes (RFC 6750 §3: error_description).
func quotable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return -1
		}
		return r
	}, s)
}
