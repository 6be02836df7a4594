package store_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/internal/redistest"
	"github.com/toolgate/toolgate/store"
)

// TestGrantRefreshLockedAcrossReplicas: two replicas (each its own Redis
// client and its own auth.Upstream) share a sealed grant about to expire
// in a real redis-server, and make calls at once. The authorization
// server rotates refresh tokens: a refresh token used twice is refused
// (which would ask the person to sign in again). With the lock in Redis
// one replica refreshes, once, and every call of both carries the new
// token.
func TestGrantRefreshLockedAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	var mu sync.Mutex
	refreshes, refused := 0, 0
	live, access := "RT-0", "AT-0"
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		time.Sleep(100 * time.Millisecond) // a slow server: two refreshes would overlap
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Form.Get("grant_type") != "refresh_token" || r.Form.Get("refresh_token") != live {
			refused++
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		refreshes++
		live, access = fmt.Sprintf("RT-%d", refreshes), fmt.Sprintf("AT-%d", refreshes)
		fmt.Fprintf(w, `{"access_token":%q,"refresh_token":%q,"token_type":"Bearer","expires_in":3600}`, access, live)
	}))
	t.Cleanup(as.Close)
	res := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ok := r.Header.Get("Authorization") == "Bearer "+access
		mu.Unlock()
		if !ok {
			w.WriteHeader(401)
		}
	}))
	t.Cleanup(res.Close)

	sealer, err := auth.NewSealer([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	var replicas []http.RoundTripper
	var key string
	for range 2 {
		tokens := &auth.SealedTokens{Blobs: store.NewRedisBlobs(client(t, srv.URL()), "toolgate:"), Sealer: sealer}
		up, err := auth.NewUpstream(auth.UpstreamOptions{Name: "tracker", URL: res.URL + "/mcp", Tokens: tokens})
		if err != nil {
			t.Fatal(err)
		}
		key = up.Key("alice")
		if len(replicas) == 0 {
			g := &auth.Grant{AccessToken: "AT-0", RefreshToken: "RT-0", Expiry: time.Now().Add(5 * time.Second), // within the skew: renewed first
				Resource: res.URL + "/mcp", TokenURL: as.URL + "/token", ClientID: "c", AuthMethod: "none"}
			if err := tokens.Save(context.Background(), key, g); err != nil {
				t.Fatal(err)
			}
		}
		replicas = append(replicas, up.Transport(nil, func(context.Context) string { return "alice" }))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, res.URL+"/mcp", strings.NewReader(`{}`))
			resp, err := replicas[i%2].RoundTrip(req)
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("HTTP %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a call: %v", err)
	}
	if refreshes != 1 || refused != 0 {
		t.Fatalf("%d refreshes and %d refused refresh tokens, want 1 and 0", refreshes, refused)
	}
}
