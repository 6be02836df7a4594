package egress

import (
	"crypto/tls"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

type corpusCase struct {
	ID        string          `json:"id"`
	Category  string          `json:"category"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Expected  string          `json:"expected"`
	Why       string          `json:"why"`
}

// notProxyCases are the network cases whose attack never reaches the proxy:
// the sandbox itself stops them.
var notProxyCases = map[string]string{
	"NE-022": "a raw packet socket: refused by the sandbox's seccomp filter",
}

var (
	urlRE       = regexp.MustCompile(`https?://[^\s'"|)]+`)
	nslookupRE  = regexp.MustCompile(`nslookup\s+(\S+)`)
	sClientRE   = regexp.MustCompile(`-connect\s+(\S+)\s+-servername\s+(\S+)`)
	allowListRE = regexp.MustCompile(`\(allowlist: ([^)]*)\)`)
)

// TestAttackCorpus runs the network cases of the shared attack corpus
// (commands that try to reach the network) as the requests they would make
// through the proxy, with the corpus's allow-list.
func TestAttackCorpus(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "attack-corpus-sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	// The listed hosts resolve (to loopback, which the test permits), so a
	// refusal comes from the policy, never from a failed lookup.
	w.dns.Set("pkgs.example.org", "127.0.0.1")
	w.dns.Set("files.example.org", "127.0.0.1")
	w.dns.Set("api.github.com", "127.0.0.1")
	ran := 0
	for _, c := range cases {
		if c.Category != "network_egress" && c.Category != "prompt_injection_exfil" || c.Tool != "execute_command" && c.Tool != "run_code" {
			continue
		}
		var args struct{ Command, Code string }
		json.Unmarshal(c.Arguments, &args)
		cmd := args.Command + args.Code
		allow := []string{"pkgs.example.org", "files.example.org", "*.github.com"}
		if m := allowListRE.FindStringSubmatch(c.Why); m != nil {
			allow = strings.Split(m[1], ", ")
		}
		pol := mustPolicy(t, PolicyConfig{Allow: allow, Resolver: w.dns.Resolver(), AllowAddrs: loopback, OnDecision: w.rec.add})
		_, addr := startProxy(t, ProxyConfig{Policy: pol})
		t.Run(c.ID, func(t *testing.T) {
			if c.Expected != "deny" {
				t.Fatalf("a network case expected to be allowed: %s", c.ID)
			}
			switch {
			case sClientRE.MatchString(cmd): // a tunnel whose TLS names another server
				m := sClientRE.FindStringSubmatch(cmd)
				conn := connectRaw(t, addr, m[1])
				err := tls.Client(conn, &tls.Config{ServerName: m[2], InsecureSkipVerify: true}).Handshake()
				if err == nil {
					t.Fatal("the handshake went through")
				}
				if d := w.rec.last(t); d.Allowed || d.Reason != SNIMismatch {
					t.Errorf("decision %+v", d)
				}
			case nslookupRE.MatchString(cmd): // DNS exfiltration: the sandbox can only ask the proxy
				name := strings.ReplaceAll(nslookupRE.FindStringSubmatch(cmd)[1], "$(", "x")
				name = "c2VjcmV0." + name[strings.LastIndex(name, ")")+1:]
				name = strings.TrimPrefix(strings.ReplaceAll(name, "..", "."), ".")
				resp, _ := rawProxy(t, addr, "CONNECT "+name+":443 HTTP/1.1\r\nHost: x\r\n\r\n")
				if resp.StatusCode != 403 {
					t.Errorf("CONNECT %s: %s", name, resp.Status)
				}
				if n := w.dns.AskedSuffix("attacker.example"); n != 0 {
					t.Errorf("the proxy looked the exfiltration name up %d times", n)
				}
			case urlRE.MatchString(cmd):
				raw := urlRE.FindString(cmd)
				u, err := url.Parse(raw)
				if err != nil {
					t.Fatalf("%s: %v", raw, err)
				}
				var req string
				if u.Scheme == "https" {
					port := u.Port()
					if port == "" {
						port = "443"
					}
					req = "CONNECT " + u.Hostname() + ":" + port + " HTTP/1.1\r\nHost: x\r\n\r\n"
				} else {
					req = "GET " + raw + " HTTP/1.1\r\nHost: x\r\n\r\n"
				}
				resp, body := rawProxy(t, addr, req)
				if resp.StatusCode != 403 {
					t.Errorf("%s: %s %s", raw, resp.Status, body)
				}
				d := w.rec.last(t)
				if d.Allowed || !(&Error{Reason: d.Reason}).Refused() {
					t.Errorf("%s: decision %+v, want a policy refusal", raw, d)
				}
				t.Logf("%s → %s (%s)", raw, d.Reason, d.Detail)
			default:
				if why, ok := notProxyCases[c.ID]; ok {
					t.Logf("not a proxy case: %s", why)
					return
				}
				t.Fatalf("no proxy request derived from %q; handle it or list it in notProxyCases", cmd)
			}
			ran++
		})
	}
	if ran < 7 {
		t.Errorf("only %d corpus cases ran through the proxy", ran)
	}
	if n := w.dns.AskedSuffix("attacker.example"); n != 0 {
		t.Errorf("attacker.example was looked up %d times", n)
	}
}
