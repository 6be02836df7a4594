package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
)

// signInLifetime is how long a sign-in holds before the key is asked again.
const signInLifetime = 12 * time.Hour

// cookieSealer keeps the key a person signed in with out of their browser
// in clear: the sign-in cookie holds it sealed (AES-256-GCM) with the time
// it was sealed, so a copied cookie is no key for /mcp and stops working
// after signInLifetime. Consoles given the same secret (every replica's)
// open each other's cookies; without one the key is this process's own.
type cookieSealer struct{ aead cipher.AEAD }

func newCookieSealer(secret []byte) cookieSealer {
	var key [32]byte
	if len(secret) > 0 {
		key = sha256.Sum256(append([]byte("toolgate console sign-in cookie\x00"), secret...))
	} else {
		rand.Read(key[:])
	}
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return cookieSealer{aead}
}

var cookieAD = []byte(keyCookie)

func (s cookieSealer) seal(key string, now time.Time) string { return s.sealFor(cookieAD, key, now) }

func (s cookieSealer) open(value string, now time.Time) (string, error) {
	return s.openFor(cookieAD, value, now, signInLifetime)
}

// sealFor seals value with the time, for the purpose ad (a cookie's
// name): a value sealed for one purpose does not open for another.
func (s cookieSealer) sealFor(ad []byte, value string, now time.Time) string {
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	plain := binary.BigEndian.AppendUint64(nil, uint64(now.Unix()))
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, append(plain, value...), ad))
}

// openFor opens what sealFor sealed for ad no longer than lifetime ago.
func (s cookieSealer) openFor(ad []byte, value string, now time.Time, lifetime time.Duration) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(b) < s.aead.NonceSize()+s.aead.Overhead()+8 {
		return "", errors.New("the sign-in cookie is damaged")
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, b[:n], b[n:], ad)
	if err != nil {
		return "", errors.New("the sign-in cookie was not made by this console (or its secret changed)")
	}
	sealed := time.Unix(int64(binary.BigEndian.Uint64(plain)), 0)
	if now.Sub(sealed) > lifetime || sealed.After(now.Add(time.Minute)) {
		return "", errors.New("the sign-in has expired")
	}
	return string(plain[8:]), nil
}
