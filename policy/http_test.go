package policy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/policy"
)

type pendingCall struct {
	ID          string          `json:"id"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	Rule        string          `json:"rule"`
	Confirm     bool            `json:"confirm"`
	AlwaysRules []string        `json:"always_rules"`
}

func TestHTTPApproverOnLoopback(t *testing.T) {
	h, err := policy.NewHTTPApprover(policy.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	cl := srv.Client()
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	pending := func(n int) []pendingCall {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := cl.Get(srv.URL + "/api/pending")
			if err != nil {
				t.Fatal(err)
			}
			var list []pendingCall
			json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
			if len(list) == n || time.Now().After(deadline) {
				return list
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	decide := func(token string, body any, mut func(*http.Request)) (int, string) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", srv.URL+"/api/decide", strings.NewReader(string(b)))
		req.Header.Set("X-Toolgate-Token", token)
		if mut != nil {
			mut(req)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	approve := func(req policy.Request) chan policy.Approval {
		ch := make(chan policy.Approval, 1)
		go func() { a, _ := h.Approve(context.Background(), req); ch <- a }()
		return ch
	}

	req := askReq(defGH, `{"title":"<script>alert(1)</script>"}`, "s")
	req.AlwaysRules = []string{"github__create_issue"}
	first := approve(req)
	list := pending(1)
	if len(list) != 1 || list[0].Tool != "github__create_issue" || list[0].Rule != "level:2" || !strings.Contains(string(list[0].Arguments), "script") {
		t.Fatalf("pending: %+v", list)
	}
	id := list[0].ID

	// the page lists it, escaped, with the token in its forms
	resp, err := cl.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "github__create_issue") || strings.Contains(string(page), "<script>") || !strings.Contains(string(page), h.Token()) {
		t.Errorf("page:\n%s", page)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers: %v", resp.Header)
	}

	// refused: no token, wrong token, another origin, a non-loopback Host (DNS rebinding)
	for name, tc := range map[string]struct {
		token string
		mut   func(*http.Request)
	}{
		"no token":    {"", nil},
		"wrong token": {strings.Repeat("0", len(h.Token())), nil},
		"origin":      {h.Token(), func(r *http.Request) { r.Header.Set("Origin", "https://evil.test") }},
		"host":        {h.Token(), func(r *http.Request) { r.Host = "evil.test" }},
	} {
		if code, _ := decide(tc.token, map[string]string{"id": id, "decision": "once"}, tc.mut); code != http.StatusForbidden {
			t.Errorf("%s: status %d", name, code)
		}
	}
	if code, _ := decide(h.Token(), map[string]string{"id": id, "decision": "maybe"}, nil); code != http.StatusBadRequest {
		t.Errorf("bad decision: %d", code)
	}
	// the page's form decides
	form := url.Values{"token": {h.Token()}, "id": {id}, "decision": {"always"}}
	resp, err = cl.PostForm(srv.URL+"/decide", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("form post: %d", resp.StatusCode)
	}
	if a := <-first; !a.Approved || a.Scope != policy.Always || a.Approver != "http" {
		t.Errorf("form decision: %+v", a)
	}
	if code, _ := decide(h.Token(), map[string]string{"id": id, "decision": "once"}, nil); code != http.StatusConflict {
		t.Errorf("deciding twice: %d", code)
	}
	if code, _ := decide(h.Token(), map[string]string{"id": "no-such-id", "decision": "once"}, nil); code != http.StatusNotFound {
		t.Errorf("deciding an unknown id: %d", code)
	}

	// level 3 over the API: needs confirm, once only
	del := approve(askReq(defDel, `{"path":"x"}`, "s"))
	id = pending(1)[0].ID
	for _, body := range []map[string]string{{"id": id, "decision": "once"}, {"id": id, "decision": "session", "confirm": "yes"}, {"id": id, "decision": "once", "confirm": "nope"}} {
		if code, msg := decide(h.Token(), body, nil); code != http.StatusBadRequest {
			t.Errorf("%v: %d %s", body, code, msg)
		}
	}
	if code, msg := decide(h.Token(), map[string]string{"id": id, "decision": "once", "confirm": "delete_file"}, nil); code != http.StatusOK {
		t.Errorf("confirmed: %d %s", code, msg)
	}
	if a := <-del; !a.Approved || a.Scope != policy.Once {
		t.Errorf("level 3: %+v", a)
	}

	// a denial with a reason
	third := approve(askReq(defCmd, `{"command":"make"}`, "s"))
	id = pending(1)[0].ID
	decide(h.Token(), map[string]string{"id": id, "decision": "deny", "reason": "run the tests first"}, nil)
	if a := <-third; a.Approved || a.Reason != "run the tests first" {
		t.Errorf("denial: %+v", a)
	}

	// an expired wait is a denial and leaves the list
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan policy.Approval, 1)
	go func() { a, _ := h.Approve(ctx, askReq(defGH, `{}`, "s")); gone <- a }()
	pending(1)
	cancel()
	if a := <-gone; a.Approved {
		t.Errorf("cancelled wait approved: %+v", a)
	}
	if l := pending(0); len(l) != 0 {
		t.Errorf("a cancelled call is still listed: %+v", l)
	}
}

func TestHTTPApproverRefusesRemoteClients(t *testing.T) {
	h, _ := policy.NewHTTPApprover(policy.HTTPOptions{})
	for _, remote := range []string{"192.0.2.1:5555", "[2001:db8::1]:80"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/api/pending", nil)
		req.RemoteAddr, req.Host = remote, "127.0.0.1:7766"
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Errorf("%s: %d", remote, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api/pending", nil)
	req.RemoteAddr, req.Host = "[::1]:5555", "localhost:7766"
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("loopback v6: %d", rec.Code)
	}
}
