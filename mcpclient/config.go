package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// DefaultTimeout bounds one call to an upstream when Config.Timeout is 0.
const DefaultTimeout = 60 * time.Second

// DefaultPrincipalIdle and DefaultMaxPrincipals are Config.PrincipalIdle's
// and Config.MaxPrincipals' defaults.
const (
	DefaultPrincipalIdle = 10 * time.Minute
	DefaultMaxPrincipals = 64
)

// DefaultProtocolVersion is the MCP version a gateway asks of its
// upstreams: the last one in which a server may send elicitation,
// sampling and log requests while it serves a call (2026-07-28 replaces
// them with multi round-trip results, which the gateway does not relay).
const DefaultProtocolVersion = "2025-11-25"

// DefaultSeparator joins the prefix and the upstream's tool name.
const DefaultSeparator = "__"

// Config describes one upstream server: how to reach it (Command, or URL)
// and how its tools are named and governed.
type Config struct {
	// Name names the upstream in tool names, tags and messages.
	Name string

	// Command starts a server that speaks MCP on its standard input and
	// output, with Args, in Dir (default: the current folder). Its
	// environment is this process's plus Env. Its standard error goes to
	// Stderr (nil: discarded).
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	Stderr  io.Writer
	// Launch, when set, starts the command instead of a plain child
	// process (e.g. in a sandbox: the gateway's CLI builds one per
	// upstream); Env is then the server's whole environment, as Launch
	// decides.
	Launch Launcher

	// URL reaches a server over streamable HTTP, or over the legacy
	// HTTP+SSE transport when SSE is set. Headers are sent with every
	// request (e.g. Authorization). HTTPClient defaults to one without a
	// timeout (streams are long-lived; calls are bounded by Timeout).
	URL        string
	Headers    map[string]string
	SSE        bool
	HTTPClient *http.Client
	// PerPrincipal gives each principal that calls the upstream's tools
	// a session of its own, every request of which carries that
	// principal in its context (PrincipalFromContext): an HTTPClient
	// that picks credentials by principal (upstream OAuth per person)
	// then never sends one principal's in another's session. The
	// gateway's own session (listing, resources, prompts, and the calls
	// of the local principal "") is the local principal's.
	PerPrincipal bool
	// PrincipalIdle closes a principal's session when no call has used it
	// for this long (default 10 minutes); MaxPrincipals bounds how many
	// principals' sessions are kept at once (default 64): one more
	// principal's first call closes the session let go of longest ago, or
	// is refused (unavailable, retry) while a call holds every one.
	PrincipalIdle time.Duration
	MaxPrincipals int

	// Prefix starts every tool and prompt name, followed by Separator:
	// default Name and "__". NoPrefix keeps the upstream's names as they
	// are.
	Prefix    string
	Separator string
	NoPrefix  bool

	// Timeout bounds one call, and the first connect and listing when
	// longer than 30 s; default DefaultTimeout.
	Timeout time.Duration
	// Levels overrides the level of the tools whose upstream name matches a
	// glob (doublestar syntax); when several match, the highest wins. This
	// is not the policy's one glob rule (policy.GlobMap: the most specific
	// key decides) on purpose: a level is a safety floor, which a narrower
	// glob or a tool's own name must not lower by accident.
	Levels map[string]tool.Level
	// Tools, when not empty, keeps only the tools whose upstream name
	// matches one of these globs (include); Exclude then leaves out those
	// matching one of its globs. The others are not registered at all.
	Tools, Exclude []string
	// Rename gives upstream tools other names (upstream name → new name);
	// the new name is prefixed like any other, and a call still reaches
	// the upstream under the original name.
	Rename map[string]string
	// Describe replaces the description the model sees of upstream tools
	// (upstream name → the operator's text).
	Describe map[string]string
	// NoResources and NoPrompts leave the upstream's resources and prompts
	// out of a Gateway.
	NoResources, NoPrompts bool
}

// A Launcher starts the process of a stdio upstream as cfg describes it
// (Command, Args, Env, Dir, Stderr) and returns its standard streams:
// Read reads its standard output, Write writes its standard input, and
// Close stops it, with every process it started, and waits until they are
// gone. mcpclient calls it on each (re)connect.
type Launcher func(ctx context.Context, cfg *Config) (io.ReadWriteCloser, error)

// An Exiter is a launched process (what a Launcher returned) that can say
// why it ended. A call cut short by the end of its upstream asks it: a
// non-nil error (a sandbox_violation naming the limit the process ran
// into, say) is the call's error instead of "unavailable". Exit returns
// nil when the process has not ended, or ended of itself.
type Exiter interface {
	Exit() *tool.Error
}

// A Piped launched process's standard output and input are pipes (the
// sandbox's): the connection reads and writes them as it does a plain
// child's, with no copy in between; Close of the process still stops it.
type Piped interface {
	Pipes() (stdout, stdin *os.File)
}

// Options are shared by the upstreams of one program.
type Options struct {
	// ClientName and ClientVersion are sent to upstreams in initialize;
	// defaults "toolgate" and "dev".
	ClientName, ClientVersion string
	// ProtocolVersion is the MCP version asked of upstreams; default
	// DefaultProtocolVersion.
	ProtocolVersion string
	// PeerFromContext returns the downstream client a call is made for,
	// from the call's context (e.g. mcpserver.SessionFromContext), or nil.
	// Upstream log messages, elicitation and sampling go to it (see the
	// package documentation). nil: they are never forwarded.
	PeerFromContext func(context.Context) Peer
	// Logger receives diagnostics and the upstreams' log messages that no
	// client gets; nil discards them.
	Logger *slog.Logger
	// Wrap, when set, is given each upstream tool as it is registered
	// (with its upstream's name and the tool's name there) and returns
	// the tool to register instead: checks around its calls and results
	// (the guardrail webhook of package trust) go here.
	Wrap func(upstream, remote string, t tool.Tool) tool.Tool
	// Vetter, when set, judges the upstreams' tools before a Gateway
	// offers them: listed, listed but each call asks, or hidden (see
	// Vetter). nil: every tool is offered.
	Vetter Vetter
	// TracerProvider and MeterProvider, when set, record every request
	// sent to an upstream as a CLIENT span, whose trace context goes in
	// the request's params._meta, and in mcp.client.operation.duration
	// (package telemetry). Both nil: no telemetry, no cost.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// WaitForSignIn: an upstream whose first connect is answered
	// auth_required (its HTTP client's credentials wait for a person to
	// sign in) does not fail NewGateway: it starts without tools and
	// tries again every SignInPoll (default 5 s); once it connects, its
	// tools are registered.
	WaitForSignIn bool
	SignInPoll    time.Duration
}

// Peer is the downstream client of a call, as a go-sdk *mcp.ServerSession
// is: what an upstream asks of its client during the call is forwarded to
// it.
type Peer interface {
	Log(ctx context.Context, params *mcp.LoggingMessageParams) error
	Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error)
	CreateMessage(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
}

// Check validates c and fills in its defaults (Connect and NewGateway
// call it; call it first to tell a configuration error from a failure to
// connect).
func (c *Config) Check() error {
	if c.Name == "" {
		return errors.New("mcpclient: an upstream needs a name")
	}
	if !registry.ValidName(c.Name) || c.Name == "." || c.Name == ".." {
		// It also names folders (a launcher's cache, a quarantine): one
		// path element, never "." or "..".
		return fmt.Errorf("mcpclient: upstream name %q: use 1-128 letters, digits, '_', '-' or '.', not \".\" or \"..\"", c.Name)
	}
	switch {
	case c.Command != "" && c.URL != "":
		return fmt.Errorf("mcpclient: upstream %s: give a command or a url, not both", c.Name)
	case c.Command == "" && c.URL == "":
		return fmt.Errorf("mcpclient: upstream %s: give a command (stdio) or a url (HTTP)", c.Name)
	case c.URL != "":
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("mcpclient: upstream %s: url %q is not an http(s) URL", c.Name, c.URL)
		}
	}
	if c.Command == "" && (len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != "" || c.Launch != nil) {
		return fmt.Errorf("mcpclient: upstream %s: args, env and cwd need a command", c.Name)
	}
	if c.URL == "" && (len(c.Headers) > 0 || c.SSE) {
		return fmt.Errorf("mcpclient: upstream %s: headers and sse need a url", c.Name)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("mcpclient: upstream %s: negative timeout", c.Name)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.PrincipalIdle < 0 || c.MaxPrincipals < 0 {
		return fmt.Errorf("mcpclient: upstream %s: negative PrincipalIdle or MaxPrincipals", c.Name)
	}
	if c.PrincipalIdle == 0 {
		c.PrincipalIdle = DefaultPrincipalIdle
	}
	if c.MaxPrincipals == 0 {
		c.MaxPrincipals = DefaultMaxPrincipals
	}
	if c.Prefix == "" {
		c.Prefix = c.Name
	}
	if c.Separator == "" {
		c.Separator = DefaultSeparator
	}
	for g, l := range c.Levels {
		if !doublestar.ValidatePattern(g) {
			return fmt.Errorf("mcpclient: upstream %s: level glob %q is not a valid pattern", c.Name, g)
		}
		if !l.Valid() {
			return fmt.Errorf("mcpclient: upstream %s: level %d for %q: want 0-3", c.Name, l, g)
		}
	}
	for _, g := range append(append([]string(nil), c.Tools...), c.Exclude...) {
		if !doublestar.ValidatePattern(g) {
			return fmt.Errorf("mcpclient: upstream %s: tool glob %q is not a valid pattern", c.Name, g)
		}
	}
	return c.checkRename()
}

// name is the local name of an upstream tool or prompt.
func (c *Config) name(remote string) string {
	if c.NoPrefix {
		return Sanitize(remote)
	}
	return Sanitize(c.Prefix + c.Separator + remote)
}

// enabled reports whether the upstream tool is kept: included (by Tools,
// or by default) and not excluded.
func (c *Config) enabled(remote string) bool {
	return (len(c.Tools) == 0 || matchAny(c.Tools, remote)) && !matchAny(c.Exclude, remote)
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := doublestar.Match(g, name); ok {
			return true
		}
	}
	return false
}

// level returns the configured level of an upstream tool, if any.
func (c *Config) level(remote string) (tool.Level, bool) {
	best, found := tool.Level(0), false
	for g, l := range c.Levels {
		if ok, _ := doublestar.Match(g, remote); ok && (!found || l > best) {
			best, found = l, true
		}
	}
	return best, found
}

// Sanitize turns a name into one the registry accepts: characters outside
// [A-Za-z0-9_.-] become '_', and it is cut at 128 bytes. An empty name
// becomes "_".
func Sanitize(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) > 128 {
		b = b[:128]
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}
