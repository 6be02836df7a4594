package runner

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ListID is the id whose token (Token(secret, ListID)) lists a runner's
// sandboxes (GET /sandboxes). ValidID refuses it, so it is no sandbox's.
const ListID = "*"

// ApprovedHeader, "1" on a request carrying a tools/call, says that the
// gateway's person approved this call after the tool asked for it (a
// dangerous command): the runner runs it as approved. The runner trusts
// the holder of the sandbox's token with this as with every call: the
// gateway governs, the runner executes.
const ApprovedHeader = "Toolgate-Approved"

// MinSecretBytes is the shortest runner secret accepted.
const MinSecretBytes = 16

// Token returns the bearer token of sandbox id under the runner secret:
// HMAC-SHA256(secret, id) in lower-case hex. A runner also accepts the
// same MAC in unpadded base64url.
func Token(secret []byte, id string) string {
	return hex.EncodeToString(mac(secret, id))
}

func mac(secret []byte, id string) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(id))
	return h.Sum(nil)
}

// presents reports whether the Authorization header value authorization
// is "Bearer " and the MAC want (hex or unpadded base64url), compared in
// constant time: the one check of a runner's requests (Runner.authorized).
func presents(authorization string, want []byte) bool {
	got, ok := bearer(authorization)
	return ok && hmac.Equal(got, want)
}

// bearer returns the MAC an Authorization header value presents.
func bearer(authorization string) ([]byte, bool) {
	scheme, tok, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, false
	}
	tok = strings.TrimSpace(tok)
	got, err := hex.DecodeString(tok)
	if err != nil {
		if got, err = base64.RawURLEncoding.DecodeString(tok); err != nil {
			return nil, false
		}
	}
	return got, true
}

// ValidID says why id is not a sandbox id, or nil: 1 to 63 ASCII letters,
// digits, '-' and '_', starting with a letter or digit (so it is one
// folder name, never "." or "..", and fits a Kubernetes label value).
func ValidID(id string) error {
	if id == "" || len(id) > 63 {
		return fmt.Errorf("sandbox id %q: want 1 to 63 characters", id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return fmt.Errorf("sandbox id %q: only letters, digits, '-' and '_', starting with a letter or digit", id)
		}
	}
	return nil
}

// CheckSecret says what is wrong with a runner secret, or nil.
func CheckSecret(secret []byte) error {
	if len(secret) == 0 {
		return errors.New("the runner secret is empty")
	}
	if len(secret) < MinSecretBytes {
		return fmt.Errorf("the runner secret has %d bytes, want at least %d bytes (e.g. openssl rand -hex 32)", len(secret), MinSecretBytes)
	}
	return nil
}
