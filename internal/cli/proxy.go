package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/procs"
	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/selection"
	"github.com/toolgate/toolgate/tool"
)

func newProxyCmd(s *streams) *cobra.Command {
	var (
		policyFile, auditPath, addr, configFile, name string
		allowRemote, noPrefix, stateless, deferTools  bool
		unisolated                                    bool
		maxRequest                                    int64
		timeout                                       time.Duration
		toolGlobs, levelFlags                         []string
		box                                           isolationFile
		passEnv                                       []string
	)
	cmd := &cobra.Command{
		Use:   "proxy [--policy FILE] [--http ADDR] (-- CMD [ARG]... | --config FILE)",
		Short: "Govern the tools of other MCP servers: an MCP gateway (stdio, or HTTP with --http)",
		Long: `Sit in front of MCP servers (upstreams) and serve their tools, resources and
prompts as one MCP server, with every tools/call governed like toolgate's own:
policy, limits, output budget, secret redaction and the audit log apply.

One upstream: give its command after --. Several (stdio and HTTP mixed): give a
YAML file with --config (see docs/proxy.example.yaml). Tools are named
<server>__<tool> (--name sets <server> for the one upstream; default
"upstream"). Their level comes from the upstream's annotations: readOnlyHint
→ 0, destructive (MCP's default when unsaid) → 3, otherwise 2; by default
levels 2 and 3 ask, and nothing answers here, so write a policy that allows
what you trust (e.g. allow: ["fs__read_*"]) or override levels with --level.

Progress, log messages, elicitation and sampling pass through between the
client and the upstreams. An upstream that crashes is restarted on the next
call (retryable "unavailable" errors meanwhile); when its tools change, the
client gets tools/list_changed.

Upstream tools are pinned when first seen (the policy's trust block; see
docs/trust.md): a tool that later changes, a new tool, every tool of an
upstream whose command or executable changed, and a tool the poisoning scan
flags are quarantined until "toolgate trust approve" (trust.on_change:
block hides them, ask asks before each call, warn only audits). Without a
policy file the pins last one run.

Without --http the gateway speaks MCP on standard input and output. With
--http ADDR it serves streamable HTTP at http://ADDR/mcp: with the policy's
auth block only to authenticated callers (docs/auth.md), otherwise loopback
only unless --allow-remote; ` + statelessLong + `
The caller's token is never forwarded: an HTTP
upstream gets its own headers, or OAuth tokens (an oauth block in the config
file: discovery, each person's sign-in with "toolgate auth login", or client
credentials; docs/auth.md).`,
		Example: `  toolgate proxy --name fs -- npx -y @modelcontextprotocol/server-filesystem ~/src
  toolgate proxy --policy toolgate.yaml --http 127.0.0.1:8766 --name everything -- npx -y @modelcontextprotocol/server-everything
  toolgate proxy --config gateway.yaml --policy toolgate.yaml
  claude mcp add gateway -- toolgate proxy --config ~/gateway.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var cfgs []mcpclient.Config
			var isos []*isolationFile
			var oauthUps []*auth.Upstream
			boxFlags := len(box.Read)+len(box.Write)+len(box.Network)+len(passEnv) > 0
			switch {
			case configFile != "" && len(args) > 0:
				return usageErr("give either --config FILE or an upstream command after --, not both")
			case configFile != "":
				if cmd.Flags().Changed("name") || noPrefix || timeout != 0 || len(toolGlobs) > 0 || len(levelFlags) > 0 {
					return usageErr("--name, --no-prefix, --timeout, --tool and --level describe the one upstream given after --; with --config, set them in the file")
				}
				if boxFlags {
					return usageErr("--read, --write, --allow-domain and --env describe the one upstream given after --; with --config, write an isolation block per server (docs/isolation.md)")
				}
				closeTokens := func() {}
				defer func() { closeTokens() }()
				pol, err := loadPolicy(policyFile)
				if err != nil {
					return err
				}
				cfgs, oauthUps, isos, err = loadGatewayFor(configFile, func() (auth.TokenStore, error) {
					t, c, err := tokenStore(policyFile)
					closeTokens = c
					return t, err
				}, callPrincipal(addr != "" && pol.Auth != nil))
				if err != nil {
					return usageErr("%v", err)
				}
			case len(args) > 0:
				if cmd.ArgsLenAtDash() != 0 {
					return usageErr("put the upstream command after --, e.g. toolgate proxy -- npx -y @modelcontextprotocol/server-everything")
				}
				levels, err := parseLevels(levelFlags)
				if err != nil {
					return err
				}
				cfgs = []mcpclient.Config{{Name: name, Command: args[0], Args: args[1:], NoPrefix: noPrefix, Timeout: timeout, Tools: toolGlobs, Levels: levels}}
				iso := box
				if unisolated && !boxFlags {
					iso.Mode = "off"
				}
				isos = []*isolationFile{&iso}
			default:
				return usageErr("name an upstream: toolgate proxy -- CMD [ARG]... (stdio), or --config FILE for several")
			}
			if addr != "" {
				if _, _, err := net.SplitHostPort(addr); err != nil {
					return usageErr("--http %q: want HOST:PORT, e.g. 127.0.0.1:8766", addr)
				}
			}
			logger := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
			for i := range cfgs {
				if err := cfgs[i].Check(); err != nil {
					return usageErr("%v", err)
				}
				cfgs[i].Stderr = s.err
			}
			if stateless && addr == "" {
				return usageErr("--stateless is for --http: stdio is one session")
			}
			wd, _ := os.Getwd()
			if configFile != "" {
				wd = filepath.Dir(configFile)
			}
			return runProxy(cmd.Context(), s, proxySetup{cfgs: cfgs, isos: isos, boxDir: wd, unisolated: unisolated, passEnv: passEnv, policy: policyFile, audit: auditPath, addr: addr, allowRemote: allowRemote, stateless: stateless, maxRequest: maxRequest, deferTools: deferTools, oauth: oauthUps, log: logger})
		},
	}
	f := cmd.Flags()
	f.StringVar(&policyFile, "policy", "", "policy file (YAML): mode, max_level, deny/ask/allow rules over the gateway's tool names")
	f.StringVar(&auditPath, "audit", defaultAuditPath(), "audit log file (JSON Lines, hash-chained), or a folder DIR/ for DIR/audit-$TOOLGATE_REPLICA.jsonl (one chain per replica); \"off\" disables it")
	f.StringVar(&configFile, "config", "", "YAML file naming several upstreams (see docs/proxy.example.yaml)")
	f.StringVar(&addr, "http", "", "serve streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8766) instead of stdio")
	f.BoolVar(&allowRemote, "allow-remote", false, "allow --http on a non-loopback address without the policy's auth block (something in front must authenticate clients)")
	f.Int64Var(&maxRequest, "max-request-bytes", 4<<20, "largest HTTP request body accepted")
	f.BoolVar(&stateless, "stateless", false, statelessHelp)
	f.StringVar(&name, "name", "upstream", "name of the upstream given after --: its tools are NAME__TOOL")
	f.BoolVar(&noPrefix, "no-prefix", false, "keep the upstream's tool and prompt names as they are")
	f.DurationVar(&timeout, "timeout", 0, "bound on one call to the upstream (default 60s)")
	f.StringArrayVar(&toolGlobs, "tool", nil, "keep only upstream tools matching this glob (repeatable)")
	f.StringArrayVar(&levelFlags, "level", nil, "GLOB=LEVEL: set the level (0-3) of upstream tools matching GLOB (repeatable)")
	f.BoolVar(&deferTools, "defer-tools", false, "list only tool_search at first; tool_search(query) loads the matching upstream tools (tools/list_changed) and learns from the calls that follow (docs/selection.md)")
	f.StringArrayVar(&box.Read, "read", nil, "a host path the boxed upstream may read (repeatable; docs/isolation.md)")
	f.Var(writeFlag{&box.Write}, "write", "a host path the boxed upstream may change (repeatable); its auto-run files (.git, .vscode, .mcp.json, …) stay read-only")
	f.StringArrayVar(&box.Network, "allow-domain", nil, "a domain the boxed upstream may reach over HTTP(S) through the egress proxy (repeatable; \"*.example.com\" for its subdomains)")
	f.StringArrayVar(&passEnv, "env", nil, "NAME: pass the gateway's variable NAME to the boxed upstream (repeatable; it gets no other but PATH, LANG, TZ, HOME and TMPDIR)")
	f.BoolVar(&unisolated, "unisolated", false, "allow an upstream outside the box: alone, the upstream after -- runs as a plain child with the gateway's authority; with --config, it allows isolation.mode: off")
	return cmd
}

// proxySetup is what runProxy needs.
type proxySetup struct {
	cfgs          []mcpclient.Config
	isos          []*isolationFile // beside cfgs: the isolation block of each (nil: the defaults)
	boxDir        string           // relative grant paths are taken against it
	unisolated    bool
	passEnv       []string
	policy, audit string
	addr          string
	allowRemote   bool
	stateless     bool // --stateless; http.stateless in the policy also sets it
	maxRequest    int64
	deferTools    bool             // --defer-tools: the upstreams' tools behind tool_search
	oauth         []*auth.Upstream // the upstreams with an oauth block
	log           *slog.Logger
}

// runProxy connects the upstreams, builds the governed engine over their
// tools and serves it until ctx ends or the stdio client leaves.
func runProxy(ctx context.Context, s *streams, p proxySetup) error {
	tel, err := startTelemetry(ctx, s)
	if err != nil {
		return err
	}
	defer stopTelemetry(tel, s)
	// Inline: each call already has its own goroutine (the MCP session's
	// handler), and the tools (upstream calls, tool_search) honour their
	// context: no hand-off to a worker and back.
	opts := engine.Options{Registry: registry.New(), Logger: p.log, TracerProvider: tel.Tracer, MeterProvider: tel.Meter, TelemetryArgumentNames: tel.ArgumentNames, Inline: true}
	pol, err := loadPolicy(p.policy)
	if err != nil {
		return err
	}
	var authn *auth.Authenticator
	if p.addr != "" {
		if err := checkHTTPAddr(p.addr, p.allowRemote, pol, "the gateway"); err != nil {
			return err
		}
		if authn, err = authenticator(pol); err != nil {
			return err
		}
	}
	stateless := p.addr != "" && (p.stateless || pol.HTTP.Stateless)
	ui := newWebConsole(p.addr)
	rc, err := openState(pol)
	if err != nil {
		return err
	}
	if rc != nil {
		defer rc.Close() // after the closers below, which may use it
	}
	approver, closers, err := mcpApprover(pol, rc, s.err, stateless, ui)
	if err != nil {
		return err
	}
	opts.Approver = approver
	opts.Limiter = ui.limiter()
	more, err := govern(&opts, pol, rc, p.audit, "", true)
	closers = append(closers, more...)
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	if err != nil {
		return err
	}
	closeBoxes, boxGrants, err := boxUpstreams(p, pol.Trust.Pins, pol.Sandbox.RequiredLevel(), opts.Auditor)
	if err != nil {
		return err
	}
	defer closeBoxes()
	// The upstream's own timeout should fire first, with the clearer message.
	for _, c := range p.cfgs {
		t := c.Timeout
		if t == 0 {
			t = mcpclient.DefaultTimeout
		}
		opts.Timeout = max(opts.Timeout, t+5*time.Second)
	}

	var ln net.Listener
	var docs map[string]http.Handler
	if p.addr != "" {
		if ln, err = net.Listen("tcp", p.addr); err != nil {
			return &exitError{exitTool, fmt.Errorf("listening on %s: %w", p.addr, err)}
		}
		defer ln.Close()
		origin := consoleOrigin(pol, ln)
		if ui.shows(pol) {
			ui.signIns = consoleSignIns(p.oauth, origin)
		}
		if docs, err = clientIDDocuments(p.oauth, origin, ui.shows(pol)); err != nil {
			return err
		}
	}

	vetter, err := newPinVetter(pol, opts.Auditor, p.log)
	if err != nil {
		return err
	}
	vetter.boxes = boxGrants
	vetter.identifyAhead(p.cfgs)
	ui.trust = pinTrust(pol, opts.Auditor)
	wrap, err := trustWrap(pol.Trust, p.log)
	if err != nil {
		return err
	}
	gw, err := mcpclient.NewGateway(ctx, opts.Registry, mcpclient.Options{
		Vetter:         vetter,
		Wrap:           wrap,
		ClientName:     "toolgate-proxy",
		ClientVersion:  version,
		Logger:         p.log,
		TracerProvider: tel.Tracer,
		MeterProvider:  tel.Meter,
		PeerFromContext: func(ctx context.Context) mcpclient.Peer {
			if ss := mcpserver.SessionFromContext(ctx); ss != nil {
				return ss
			}
			return nil
		},
		// Over HTTP the gateway starts before the operator signs in
		// (their sign-in lists the tools): it says so below.
		WaitForSignIn: p.addr != "",
	}, p.cfgs...)
	if err != nil {
		return startFailure(err)
	}
	defer gw.Close()
	for _, up := range p.oauth {
		if st, err := up.Status(ctx, ""); err == nil && !st.SignedIn && up.Grant() == auth.GrantAuthorizationCode {
			cmd := up.SignInCommand()
			if p.policy != "" {
				cmd += " --policy " + p.policy
			}
			fmt.Fprintf(s.err, "toolgate: upstream %s waits for the gateway's own sign-in, which lists its tools: %s (at this host; the gateway picks it up)\n", up.Name(), cmd)
		}
	}
	var deferred atomic.Pointer[selection.Deferred]
	if pins := pol.Trust.Pins; pins != "" {
		// An approval (toolgate trust approve) changes the pin file.
		watch, stop := context.WithCancel(ctx)
		defer stop()
		go watchPins(watch, pins, time.Second, func() {
			if err := gw.Refresh(); err != nil {
				p.log.Warn("tools not all registered", "err", err)
			}
			if d := deferred.Load(); d != nil {
				if err := d.Refresh(); err != nil {
					p.log.Warn("tools not all deferred", "err", err)
				}
			}
		})
	}

	var hook *learnHook
	if p.deferTools {
		hook = &learnHook{next: opts.Auditor}
		opts.Auditor = hook
	}
	eng := engine.New(opts)
	if p.deferTools {
		d, closer, err := deferUpstreams(opts.Registry, eng, pol, rc, tel.Meter, hook, vetter, p.cfgs, p.log)
		if closer != nil {
			defer closer()
		}
		if err != nil {
			return &exitError{exitTool, err}
		}
		defer d.Close()
		deferred.Store(d)
	}
	srv, err := mcpserver.New(mcpserver.Options{
		Engine:         eng,
		Name:           "toolgate-proxy",
		Version:        version,
		Instructions:   instructions(gw),
		NoPrompts:      true,
		MCP:            gw.ServerOptions(),
		Logger:         p.log,
		TracerProvider: tel.Tracer,
		MeterProvider:  tel.Meter,
	})
	if err != nil {
		return &exitError{exitTool, err}
	}
	defer srv.Close()
	gw.Mount(srv.MCP())

	if p.addr == "" {
		procs.Narrow() // one client, mostly one call at a time: see internal/procs
		if err := srv.Run(ctx, stdioTransport(s)); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			return &exitError{exitTool, fmt.Errorf("serving MCP on stdio: %w", err)}
		}
		return nil
	}
	o := mcpserver.HTTPOptions{Loopback: mcpserver.IsLoopback(p.addr), MaxRequestBytes: p.maxRequest, Stateless: stateless}
	return serveHTTP(ctx, s, srv, ln, o, authn, readiness(&opts), nil, ui.handler(pol, eng, p.audit, authn, o.Loopback), docs)
}

// instructions joins the upstreams' instructions, each under its name.
func instructions(gw *mcpclient.Gateway) string {
	var b strings.Builder
	for _, u := range gw.Upstreams() {
		ir := u.InitializeResult()
		if ir == nil || strings.TrimSpace(ir.Instructions) == "" {
			continue
		}
		fmt.Fprintf(&b, "## %s (tools %s…)\n\n%s\n\n", u.Name(), u.Config().Prefix+u.Config().Separator, strings.TrimSpace(ir.Instructions))
	}
	return strings.TrimSpace(b.String())
}

// parseLevels reads --level GLOB=LEVEL flags.
func parseLevels(flags []string) (map[string]tool.Level, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := map[string]tool.Level{}
	for _, f := range flags {
		glob, l, ok := strings.Cut(f, "=")
		lv, err := strconv.Atoi(l)
		if !ok || glob == "" || err != nil || !tool.Level(lv).Valid() {
			return nil, usageErr("--level %q: want GLOB=LEVEL with LEVEL 0, 1, 2 or 3, e.g. --level 'read_*=0'", f)
		}
		out[glob] = tool.Level(lv)
	}
	return out, nil
}

// proxyFile is the YAML shape of `toolgate proxy --config FILE`.
type proxyFile struct {
	Servers []proxyServer `yaml:"servers"`
}

type proxyServer struct {
	Name      string            `yaml:"name"`
	Command   string            `yaml:"command"`
	Args      []string          `yaml:"args"`
	Env       map[string]string `yaml:"env"`
	Cwd       string            `yaml:"cwd"`
	URL       string            `yaml:"url"`
	Headers   map[string]string `yaml:"headers"`
	OAuth     *auth.OAuth       `yaml:"oauth"`
	SSE       bool              `yaml:"sse"`
	Prefix    string            `yaml:"prefix"`
	Separator string            `yaml:"separator"`
	NoPrefix  bool              `yaml:"no_prefix"`
	Timeout   string            `yaml:"timeout"`
	Levels    map[string]int    `yaml:"levels"` // also under tools:
	Tools     proxyTools        `yaml:"tools"`
	Resources *bool             `yaml:"resources"`
	Prompts   *bool             `yaml:"prompts"`
	Isolation *isolationFile    `yaml:"isolation"`
}

// loadProxyConfig reads a gateway configuration: unknown fields are
// errors; ${VAR} in env and header values is taken from the environment;
// a relative cwd is taken against the file's folder. The grants of oauth
// blocks are kept sealed in the state folder.
func loadProxyConfig(file string) ([]mcpclient.Config, []*isolationFile, error) {
	cfgs, _, isos, err := loadGateway(file, fileTokens)
	return cfgs, isos, err
}

// loadGateway reads a gateway configuration, and makes the token keeper
// of each server with an oauth block, its grants in the store tokens
// opens (called once, when a block needs it).
func loadGateway(file string, tokens func() (auth.TokenStore, error)) ([]mcpclient.Config, []*auth.Upstream, []*isolationFile, error) {
	return loadGatewayFor(file, tokens, nil)
}

// loadGatewayFor is loadGateway whose upstream calls carry the grant of
// the principal principalOf finds in their context (nil: the local
// principal's, for a stdio gateway).
func loadGatewayFor(file string, tokens func() (auth.TokenStore, error), principalOf func(context.Context) string) ([]mcpclient.Config, []*auth.Upstream, []*isolationFile, error) {
	var store auth.TokenStore
	var ups []*auth.Upstream
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--config: %w", err)
	}
	var pf proxyFile
	if err := yaml.NewDecoder(bytes.NewReader(data), yaml.Strict(), yaml.DisallowUnknownField()).Decode(&pf); err != nil {
		return nil, nil, nil, fmt.Errorf("--config %s: %s", file, yaml.FormatError(err, false, true))
	}
	if len(pf.Servers) == 0 {
		return nil, nil, nil, fmt.Errorf("--config %s: no servers: list at least one under servers:", file)
	}
	var out []mcpclient.Config
	var isos []*isolationFile
	for i, sv := range pf.Servers {
		where := fmt.Sprintf("--config %s: servers[%d]", file, i)
		if sv.Name != "" {
			where += " (" + sv.Name + ")"
		}
		c := mcpclient.Config{
			Name: sv.Name, Command: sv.Command, Args: sv.Args, URL: sv.URL, SSE: sv.SSE,
			Prefix: sv.Prefix, Separator: sv.Separator, NoPrefix: sv.NoPrefix,
			NoResources: sv.Resources != nil && !*sv.Resources,
			NoPrompts:   sv.Prompts != nil && !*sv.Prompts,
		}
		if sv.Cwd != "" {
			c.Dir = sv.Cwd
			if !filepath.IsAbs(c.Dir) {
				c.Dir = filepath.Join(filepath.Dir(file), c.Dir)
			}
		}
		if len(sv.Env) > 0 {
			c.Env = map[string]string{}
			for k, v := range sv.Env {
				c.Env[k] = os.ExpandEnv(v)
			}
		}
		if len(sv.Headers) > 0 {
			c.Headers = map[string]string{}
			for k, v := range sv.Headers {
				c.Headers[k] = os.ExpandEnv(v)
			}
		}
		if oa := sv.OAuth; oa != nil {
			if sv.URL == "" {
				return nil, nil, nil, fmt.Errorf("%s: oauth needs a url (OAuth is for HTTP upstreams)", where)
			}
			for k := range c.Headers {
				if strings.EqualFold(k, "Authorization") {
					return nil, nil, nil, fmt.Errorf("%s: give oauth or an Authorization header, not both", where)
				}
			}
			if store == nil {
				if store, err = tokens(); err != nil {
					return nil, nil, nil, fmt.Errorf("%s: oauth: %v", where, err)
				}
			}
			up, err := auth.NewUpstream(auth.UpstreamOptions{
				Name: sv.Name, URL: sv.URL, OAuth: *oa, Tokens: store, Dir: filepath.Dir(file),
				SignIn: "toolgate auth login " + sv.Name + " --config " + file, ClientName: "toolgate",
			})
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%s: %v", where, err)
			}
			c.HTTPClient = &http.Client{Transport: up.Transport(nil, principalOf)}
			c.PerPrincipal = principalOf != nil && up.PerPrincipal()
			ups = append(ups, up)
		}
		if sv.Timeout != "" {
			d, err := time.ParseDuration(sv.Timeout)
			if err != nil || d <= 0 {
				return nil, nil, nil, fmt.Errorf("%s: timeout %q: want a duration such as 30s or 2m", where, sv.Timeout)
			}
			c.Timeout = d
		}
		if err := sv.Tools.shape(&c, sv.Levels, where); err != nil {
			return nil, nil, nil, err
		}
		if sv.Isolation != nil && sv.URL != "" {
			return nil, nil, nil, fmt.Errorf("%s: isolation is for stdio servers (command:); a remote server's host is its box", where)
		}
		out = append(out, c)
		isos = append(isos, sv.Isolation)
	}
	return out, ups, isos, nil
}

// callPrincipal is whose grant an upstream call carries: over --http with
// the policy's auth block (authenticated), the principal who made the
// call (the gateway's own listing, the local principal's); otherwise
// (stdio, or HTTP callers that only declare a name) the local
// principal's ("").
func callPrincipal(authenticated bool) func(context.Context) string {
	if !authenticated {
		return nil
	}
	return func(ctx context.Context) string {
		p, _ := mcpclient.PrincipalFromContext(ctx)
		return p
	}
}

// fileTokens opens the sealed grants in the state folder.
func fileTokens() (auth.TokenStore, error) {
	t, _, err := tokenStore("")
	return t, err
}

// startFailure is the gateway's start error err as the command's: every
// upstream's failure (NewGateway joins them), a sign-in wanted (the tools
// are listed with the local principal's sign-in) as its text, with the
// exit code of an upstream's box below the policy's level if there is one.
func startFailure(err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	code, texts := exitTool, make([]string, 0, len(errs))
	for _, e := range errs {
		if ee := (*exitError)(nil); errors.As(e, &ee) {
			code = ee.code
		}
		if te := (*tool.Error)(nil); errors.As(e, &te) && te.Type == tool.AuthRequired {
			texts = append(texts, te.Text())
		} else {
			texts = append(texts, e.Error())
		}
	}
	return &exitError{code, errors.New(strings.Join(texts, "\n"))}
}
