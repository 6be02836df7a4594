package console

import (
	"strings"
	"testing"
	"time"
)

// TestCookieSealer: a sealed key opens only with the same secret, within
// its lifetime, unaltered; the cookie never holds the key in clear.
func TestCookieSealer(t *testing.T) {
	now := time.Now()
	const key = "key-admin-0123456789"
	a, b, other := newCookieSealer([]byte("replica secret")), newCookieSealer([]byte("replica secret")), newCookieSealer(nil)
	v := a.seal(key, now)
	if strings.Contains(v, key) || strings.Contains(v, "0123456789") {
		t.Fatalf("the cookie holds the key: %s", v)
	}
	if got, err := b.open(v, now.Add(time.Hour)); err != nil || got != key {
		t.Errorf("another replica with the same secret: %q %v", got, err)
	}
	if a.seal(key, now) == v {
		t.Error("two seals of one key are equal (the nonce must differ)")
	}
	flip := []byte(v)
	flip[len(flip)/2] ^= 1
	for name, tc := range map[string]struct {
		s     cookieSealer
		value string
		at    time.Time
	}{
		"other secret":    {other, v, now},
		"expired":         {a, v, now.Add(signInLifetime + time.Second)},
		"from the future": {a, a.seal(key, now.Add(time.Hour)), now},
		"altered":         {a, string(flip), now},
		"truncated":       {a, v[:20], now},
		"not base64":      {a, "%%%", now},
		"the key itself":  {a, key, now},
		"empty":           {a, "", now},
	} {
		if got, err := tc.s.open(tc.value, tc.at); err == nil {
			t.Errorf("%s: opened as %q", name, got)
		}
	}
}
