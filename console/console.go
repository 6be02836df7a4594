package console

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// Options configure a Console. Every field may be left empty: the page it
// feeds then says so.
type Options struct {
	// Approvals is the approver whose queue the console lists and answers
	// on its approvals page and its JSON API (with state.redis, the queue
	// every replica shares).
	Approvals *policy.QueueApprover
	// Token is the secret a decision posted to the approvals API carries
	// in X-Toolgate-Token when there is no Authenticate (see api.go); ""
	// : the API takes no decision without an authenticator.
	Token string
	// ApprovalsOnly serves the approvals page and its API alone (the
	// console of approvals.http): also at / (a redirect to /ui/),
	// /api/pending and /api/decide, the paths of the page it replaces.
	ApprovalsOnly bool
	// Changes subscribes to changes of that queue made in this process
	// (policy.WatchedQueue.Subscribe); the console also looks every few
	// seconds for those of other replicas.
	Changes func() (<-chan struct{}, func())
	// AuditLogs returns the audit logs to show: one file, or every
	// replica's chain in a folder.
	AuditLogs func() []string
	// Tools returns the tools a caller is shown, as the model sees them.
	Tools func(call tool.Call) []tool.Definition
	// Selection, when set, returns how well tool_search ranked: per week
	// and upstream, where the tool called after a search stood in it (the
	// tools page shows it).
	Selection func() []SelectionRow
	// Policy is the policy in force: its rules, limits and the what-if box.
	Policy *policy.Policy
	// Trust is the gateway's pin file: the tools page lists pinned and
	// quarantined upstream tools, and approvers approve them (nil: none).
	Trust Trust
	// Activity counts the calls the engine runs (put it in the engine's
	// limiter chain).
	Activity *Activity
	// Authenticate checks a bearer token (an API key or a JWT) as /mcp
	// does and says who it names. Nil: no authentication; the console is
	// served to loopback clients only and its user is the local admin.
	Authenticate func(ctx context.Context, token string) (User, error)
	// Loopback: the console is this machine's (the server listens on a
	// loopback address, or approvals.http), so the client's address, the
	// Host and the Origin must name this machine (the DNS-rebinding guard
	// of /mcp).
	Loopback bool
	// SignIns are the OAuth-protected upstreams people sign in to on the
	// tools page, each for the principal they use the console as (nil:
	// none).
	SignIns SignIns
	// CookieSecret seals the sign-in cookie (it holds the key a person
	// signed in with). Give every replica the same one so that a sign-in
	// holds on all of them; nil: a secret of this process's own.
	CookieSecret []byte
	// Logger receives what goes wrong (nil: slog.Default()).
	Logger *slog.Logger
}

// User is who uses the console.
type User struct {
	Name  string
	Roles []string         // credential roles and the principal's policy role
	Auth  *tool.Credential // nil: the local user
}

// Console is an http.Handler serving the pages under /ui/.
type Console struct {
	o     Options
	mux   *http.ServeMux
	pages map[string]*template.Template
	log   *slog.Logger
	seal  cookieSealer

	closing   chan struct{} // closed by Close: event streams end
	closeOnce sync.Once

	mu      sync.Mutex
	recent  []answered // newest first
	subs    map[chan struct{}]struct{}
	verdict map[string]verified // audit log path → last Verify, by size and time
}

//go:embed assets
var assets embed.FS

// New returns the console.
func New(o Options) *Console {
	c := &Console{o: o, mux: http.NewServeMux(), pages: map[string]*template.Template{}, log: o.Logger, seal: newCookieSealer(o.CookieSecret),
		subs: map[chan struct{}]struct{}{}, verdict: map[string]verified{}, closing: make(chan struct{})}
	if c.log == nil {
		c.log = slog.Default()
	}
	for _, p := range []string{"approvals", "audit", "tools", "policy", "activity", "login", "problem", "signin"} {
		c.pages[p] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+p+".html"))
	}
	static, _ := fs.Sub(assets, "assets/static")
	c.mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET /ui/login", c.loginPage)
	c.mux.HandleFunc("POST /ui/login", c.login)
	c.mux.HandleFunc("POST /ui/logout", c.logout)
	c.mux.Handle("GET /ui/{$}", c.reader(c.approvalsPage))
	c.mux.Handle("GET /ui/queue", c.reader(c.queuePart))
	c.mux.Handle("GET /ui/events", c.reader(c.events))
	c.mux.Handle("POST /ui/decide", c.reader(c.decide))
	c.mux.HandleFunc("GET /ui/api/pending", c.apiPending)
	c.mux.HandleFunc("POST /ui/api/decide", c.apiDecide)
	if o.ApprovalsOnly {
		c.mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusSeeOther))
		c.mux.HandleFunc("GET /api/pending", c.apiPending)
		c.mux.HandleFunc("POST /api/decide", c.apiDecide)
		return c
	}
	c.mux.Handle("GET /ui/audit", c.reader(c.auditPage))
	c.mux.Handle("GET /ui/tools", c.reader(c.toolsPage))
	c.mux.Handle("POST /ui/trust", c.reader(c.approveTrust))
	c.mux.Handle("GET /ui/policy", c.reader(c.policyPage))
	c.mux.Handle("POST /ui/policy", c.reader(c.policyPage))
	c.mux.Handle("GET /ui/activity", c.reader(c.activityPage))
	c.mux.Handle("GET /ui/signin/{upstream}", c.reader(c.signInPage))
	c.mux.Handle("POST /ui/signin/{upstream}", c.reader(c.beginSignIn))
	c.mux.HandleFunc("GET /ui/signin/{upstream}/callback", c.signInCallback)
	c.mux.Handle("POST /ui/signout/{upstream}", c.reader(c.signOut))
	return c
}

// Close ends the event streams of open pages (they reconnect to whatever
// serves /ui/ next), so that a server shutting down need not wait for
// them. The console keeps serving pages.
func (c *Console) Close() {
	c.closeOnce.Do(func() { close(c.closing) })
}

// csp allows this origin's script, style and images, nothing inline, and
// no framing.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// ServeHTTP checks where the request comes from, then serves the page.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // not no-referrer: Chromium then sends forms with Origin: null
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if why := c.foreign(r); why != "" {
		http.Error(w, "Forbidden: "+why, http.StatusForbidden)
		return
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, 256<<10)
	}
	c.mux.ServeHTTP(w, r)
}

// foreign says why a request may come from another site ("" : it does
// not): a Host that is not this machine when serving on loopback (DNS
// rebinding), an Origin other than the Host, a POST another site or a
// sandboxed frame sent, or a page of another origin reading the console.
func (c *Console) foreign(r *http.Request) string {
	if c.o.Loopback && !loopbackHost(r.RemoteAddr) {
		return "the console is served to this machine only"
	}
	if c.o.Loopback && !loopbackHost(r.Host) {
		return "the Host header must name this machine (localhost, 127.0.0.1 or [::1]); refusing a possible DNS-rebinding request"
	}
	origin := r.Header.Get("Origin")
	if origin != "" && origin != "null" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, r.Host) || (u.Scheme != "http" && u.Scheme != "https") {
			return "the Origin does not match the Host; cross-origin requests are refused"
		}
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		if r.Method != http.MethodGet || r.Header.Get("Sec-Fetch-Mode") != "navigate" {
			return "a request sent by another site is refused"
		}
	}
	if r.Method == http.MethodPost && origin == "null" {
		return "a form from a sandboxed or opaque origin is refused"
	}
	return ""
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// page renders one page of the layout.
func (c *Console) page(w http.ResponseWriter, r *http.Request, status int, name string, u *User, data map[string]any) {
	if data == nil {
		data = map[string]any{}
	}
	data["Page"] = name
	data["User"] = u
	data["CSRF"] = c.csrf(w, r)
	data["ApprovalsOnly"] = c.o.ApprovalsOnly
	if u != nil {
		data["CanAnswer"] = c.mayAnswer(*u)
		data["SignedIn"] = c.o.Authenticate != nil
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.pages[name].Execute(w, data); err != nil {
		c.log.Warn("console: rendering a page failed", "page", name, "err", err)
	}
}

// problem answers with a page that says what went wrong and what to do.
func (c *Console) problem(w http.ResponseWriter, r *http.Request, status int, u *User, msg, suggestion string) {
	c.page(w, r, status, "problem", u, map[string]any{"Message": msg, "Suggestion": suggestion})
}

// mayAnswer reports whether u may answer approvals.
func (c *Console) mayAnswer(u User) bool { return c.access().MayAnswer(u.Roles) }

func (c *Console) access() policy.Console {
	if c.o.Policy == nil {
		return policy.Console{}
	}
	return c.o.Policy.Console
}
