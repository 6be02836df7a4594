package auth

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/internal/atomicfile"

	"golang.org/x/oauth2"
)

// Grant is what a sign-in to an upstream leaves behind: the tokens, and
// what is needed to refresh them and to sign in again without a new
// discovery. It holds secrets (the tokens, a registered client's secret):
// it is kept sealed and never logged.
type Grant struct {
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Scopes were asked for when the token was granted; Want are the
	// scopes an upstream asked for since (insufficient_scope): the next
	// sign-in asks for their union. StepUps counts the sign-ins made for
	// Want, bounded by MaxStepUps.
	Scopes  []string `json:"scopes,omitempty"`
	Want    []string `json:"want,omitempty"`
	StepUps int      `json:"step_ups,omitempty"`
	// Resource is the RFC 8707 resource the token is bound to.
	Resource string `json:"resource"`
	// The authorization server and the client toolgate is there.
	Issuer        string    `json:"issuer,omitempty"`
	TokenURL      string    `json:"token_url"`
	RevocationURL string    `json:"revocation_url,omitempty"`
	ClientID      string    `json:"client_id"`
	ClientSecret  string    `json:"client_secret,omitempty"`
	AuthMethod    string    `json:"auth_method,omitempty"` // client_secret_basic, client_secret_post, none
	SignedIn      time.Time `json:"signed_in"`
}

// token is the grant's token as x/oauth2 has it.
func (g *Grant) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: g.AccessToken, RefreshToken: g.RefreshToken, TokenType: g.TokenType, Expiry: g.Expiry}
}

// setToken takes a token just issued: a refresh that returns no new
// refresh token keeps the old one (RFC 6749 §6), one that returns a new
// one replaces it (rotation).
func (g *Grant) setToken(t *oauth2.Token) {
	g.AccessToken, g.TokenType, g.Expiry = t.AccessToken, t.TokenType, t.Expiry
	if t.RefreshToken != "" {
		g.RefreshToken = t.RefreshToken
	}
}

// TokenStore keeps grants, one per key (an upstream and a principal).
// Implementations seal what they keep (the file store here; the Redis one
// in package store).
type TokenStore interface {
	// Load returns the stored grant, or nil and no error when there is
	// none.
	Load(ctx context.Context, key string) (*Grant, error)
	Save(ctx context.Context, key string, g *Grant) error
	Delete(ctx context.Context, key string) error
}

// GrantKey is the store key of the grant of an upstream (its name and
// URL: a grant never goes to another server under the same name) for a
// principal ("" for one grant shared by the whole gateway).
func GrantKey(upstream, url, principal string) string {
	return upstream + "\x00" + url + "\x00" + principal
}

// Sealer seals a grant with AES-256-GCM, the key and purpose as additional
// data, so that a sealed grant does not open under another key.
type Sealer struct{ aead cipher.AEAD }

// NewSealer returns a sealer keyed by 32 bytes.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, errors.New("auth: a token sealing key is 32 bytes")
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		return nil, err
	}
	return &Sealer{a}, nil
}

// Seal encrypts g for key.
func (s *Sealer) Seal(key string, g *Grant) ([]byte, error) {
	plain, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	return s.SealBytes("toolgate-oauth-grant\x00"+key, plain)
}

// Open decrypts what Seal made for key.
func (s *Sealer) Open(key string, sealed []byte) (*Grant, error) {
	plain, err := s.OpenBytes("toolgate-oauth-grant\x00"+key, sealed)
	if err != nil {
		return nil, errors.New("auth: a sealed grant does not open with this key (sign in again)")
	}
	var g Grant
	if err := json.Unmarshal(plain, &g); err != nil {
		return nil, fmt.Errorf("auth: a sealed grant: %w", err)
	}
	return &g, nil
}

// SealBytes encrypts plain with a random nonce, bound to ad (what it is
// and whose: it opens only with the same ad). Other state the replicas
// share in Redis is sealed with it too (store.RedisProcesses).
func (s *Sealer) SealBytes(ad string, plain []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, plain, []byte(ad)), nil
}

// OpenBytes decrypts what SealBytes made for ad.
func (s *Sealer) OpenBytes(ad string, sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("auth: a sealed value is too short")
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(ad))
	if err != nil {
		return nil, errors.New("auth: a sealed value does not open with this key")
	}
	return plain, nil
}

// Blobs keeps opaque values by key: a folder (FileBlobs), or Redis
// (store.RedisBlobs). Get returns nil and no error for a missing key.
type Blobs interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, value []byte) error
	Delete(ctx context.Context, key string) error
}

// A Locker serialises the renewal of one grant across processes (the
// replicas sharing state.redis): Lock takes the lock named key, waiting
// until ctx ends, and unlock frees it. store.RedisBlobs is one.
type Locker interface {
	Lock(ctx context.Context, key string) (unlock func(), err error)
}

// SealedTokens keeps grants sealed in Blobs.
type SealedTokens struct {
	Blobs  Blobs
	Sealer *Sealer
}

// Load implements TokenStore.
func (s *SealedTokens) Load(ctx context.Context, key string) (*Grant, error) {
	b, err := s.Blobs.Get(ctx, blobKey(key))
	if err != nil || b == nil {
		return nil, err
	}
	return s.Sealer.Open(key, b)
}

// Save implements TokenStore.
func (s *SealedTokens) Save(ctx context.Context, key string, g *Grant) error {
	b, err := s.Sealer.Seal(key, g)
	if err != nil {
		return err
	}
	return s.Blobs.Set(ctx, blobKey(key), b)
}

// Lock implements Locker when the Blobs do (Redis); otherwise it holds
// nothing (one process: the transport's own lock serialises it).
func (s *SealedTokens) Lock(ctx context.Context, key string) (func(), error) {
	if l, ok := s.Blobs.(Locker); ok {
		return l.Lock(ctx, blobKey(key))
	}
	return func() {}, nil
}

// Delete implements TokenStore.
func (s *SealedTokens) Delete(ctx context.Context, key string) error {
	return s.Blobs.Delete(ctx, blobKey(key))
}

// blobKey names a grant by its key's SHA-256: no principal or URL in a
// file name or a Redis key.
func blobKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:16])
}

// FileBlobs keeps values in a folder, one file each (KEY.grant), written
// atomically (a temporary file renamed), mode 0600.
type FileBlobs struct{ Dir string }

func (f FileBlobs) path(key string) string { return filepath.Join(f.Dir, key+".grant") }

// Get implements Blobs.
func (f FileBlobs) Get(_ context.Context, key string) ([]byte, error) {
	b, err := os.ReadFile(f.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// Set implements Blobs.
func (f FileBlobs) Set(_ context.Context, key string, value []byte) error {
	return atomicfile.Write(f.path(key), value, 0o600)
}

// Delete implements Blobs.
func (f FileBlobs) Delete(_ context.Context, key string) error {
	if err := os.Remove(f.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// KeyFromSecret derives a sealing key from a shared secret (every replica
// sealing grants in Redis is given the same one): its SHA-256. The
// secret must be at least 32 bytes.
func KeyFromSecret(secret string) ([]byte, error) {
	if len(secret) < 32 {
		return nil, errors.New("auth: a token sealing secret is 32 bytes at least (e.g. openssl rand -hex 32)")
	}
	h := sha256.Sum256([]byte("toolgate-oauth-grants\x00" + secret))
	return h[:], nil
}

// OpenFileTokens opens the grants sealed in the folder dir, with key, or
// (nil) the key in dir/key: 32 random bytes made on first use, mode 0600.
func OpenFileTokens(dir string, key []byte) (*SealedTokens, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("auth: token folder: %w", err)
	}
	if key == nil {
		keyFile := filepath.Join(dir, "key")
		var err error
		key, err = os.ReadFile(keyFile)
		if errors.Is(err, fs.ErrNotExist) {
			key = make([]byte, 32)
			if _, err := rand.Read(key); err != nil {
				return nil, err
			}
			if err := atomicfile.Write(keyFile, key, 0o600); err != nil {
				return nil, err
			}
			// Two processes may make a key at once: the file's is the one.
			key, err = os.ReadFile(keyFile)
		}
		if err != nil {
			return nil, fmt.Errorf("auth: token key: %w", err)
		}
	}
	s, err := NewSealer(key)
	if err != nil {
		return nil, err
	}
	return &SealedTokens{Blobs: FileBlobs{dir}, Sealer: s}, nil
}
