package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/telemetry"
)

// Options configure a Server. Only Engine is required.
type Options struct {
	// Engine executes every call; the tools served are its registry's.
	Engine *engine.Engine

	Name         string // server name in initialize; default "toolgate"
	Version      string // server version; default "dev"
	Instructions string // optional instructions for clients

	// Roots are the folders offered as resources and narrowed by client
	// roots; the first one is the base of relative paths. They should be
	// the folders the file tools are confined to.
	Roots []string
	// ReadTool and ListTool read files and folders for resources/read;
	// defaults "read_file" and "list_directory".
	ReadTool, ListTool string
	// MaxResourceBytes caps the text of one file resource; default 8 MiB.
	MaxResourceBytes int
	// NoPrompts leaves out the built-in prompts.
	NoPrompts bool
	// NoCallLog sends no notifications/message telling the session how
	// each call ended (a runner's sandbox: the gateway calling it logs and
	// audits its own calls, and the message would cost every call an
	// event both ways).
	NoCallLog bool

	// MCP is the base of the go-sdk server options (CompletionHandler,
	// SubscribeHandler, KeepAlive, …). The server sets its own
	// InitializedHandler and RootsListChangedHandler, calling any set here.
	MCP *mcp.ServerOptions
	// OnSessionEnd, when set, is called with a session's id (tool.Call's
	// Session) once the session is over: stdio's input ended, an HTTP
	// client deleted its session, or the session expired. Only sessions
	// that made a call are told of. The process tools end their processes
	// there.
	OnSessionEnd func(session string)
	// Logger receives the server's own diagnostics; nil discards them.
	Logger *slog.Logger

	// TracerProvider and MeterProvider, when set, record every MCP request
	// as a SERVER span and in mcp.server.operation.duration (package
	// telemetry); give the engine the same providers, so its execute_tool
	// spans nest under the server's. Both nil: no telemetry, no cost.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// Server serves a registry over MCP. Create it with New; it is safe for
// concurrent use and may serve many sessions (stdio and HTTP) at once.
type Server struct {
	opts   Options
	engine *engine.Engine
	mcp    *mcp.Server
	log    *slog.Logger
	roots  []root         // Options.Roots, resolved
	tel    *telemetry.MCP // nil without telemetry

	toolsMu sync.Mutex
	served  map[string]string // tool name → fingerprint of what was added
	unsub   func()

	sessions sync.Map // *mcp.ServerSession → *session
}

// New returns a server over o.Engine's registry. It follows the registry
// until Close.
func New(o Options) (*Server, error) {
	if o.Engine == nil || o.Engine.Registry() == nil {
		return nil, errors.New("mcpserver: Options.Engine (with a registry) is required")
	}
	if o.Name == "" {
		o.Name = "toolgate"
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.ReadTool == "" {
		o.ReadTool = "read_file"
	}
	if o.ListTool == "" {
		o.ListTool = "list_directory"
	}
	if o.MaxResourceBytes <= 0 {
		o.MaxResourceBytes = 8 << 20
	}
	s := &Server{opts: o, engine: o.Engine, log: o.Logger, served: map[string]string{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, d := range o.Roots {
		r, err := newRoot(d)
		if err != nil {
			return nil, fmt.Errorf("mcpserver: root %q: %w", d, err)
		}
		s.roots = append(s.roots, r)
	}
	tel, err := telemetry.NewMCPServer(o.TracerProvider, o.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: telemetry: %w", err)
	}
	s.tel = tel

	var so mcp.ServerOptions
	if o.MCP != nil {
		so = *o.MCP
	}
	userInit, userRoots := so.InitializedHandler, so.RootsListChangedHandler
	so.InitializedHandler = func(ctx context.Context, req *mcp.InitializedRequest) {
		s.state(req.Session)
		if userInit != nil {
			userInit(ctx, req)
		}
	}
	so.RootsListChangedHandler = func(ctx context.Context, req *mcp.RootsListChangedRequest) {
		s.state(req.Session).invalidateRoots()
		if userRoots != nil {
			userRoots(ctx, req)
		}
	}
	if so.Logger == nil {
		so.Logger = o.Logger
	}
	if so.Capabilities == nil {
		// Logging is offered, and tools are announced (with list_changed)
		// even while the registry is empty.
		so.Capabilities = &mcp.ServerCapabilities{
			Logging: &mcp.LoggingCapabilities{},
			Tools:   &mcp.ToolCapabilities{ListChanged: true},
		}
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: o.Name, Title: "toolgate", Version: o.Version}, &so)
	s.mcp.AddReceivingMiddleware(s.visibility)
	if s.tel != nil {
		s.mcp.AddReceivingMiddleware(s.traced) // outermost: it sees every answer
	}

	s.unsub = s.engine.Registry().Subscribe(func(registry.Event) { s.syncTools() })
	s.syncTools()
	if err := s.addResources(); err != nil {
		s.unsub()
		return nil, err
	}
	if !o.NoPrompts {
		s.addPrompts()
	}
	return s, nil
}

// MCP returns the underlying go-sdk server, to add features the options do
// not cover (more resources, prompts, …). Do not add or remove tools there:
// they follow the registry.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one session over t (e.g. &mcp.StdioTransport{}) until the
// client disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}

// Close stops following the registry. Sessions already running go on until
// their clients leave.
func (s *Server) Close() error {
	s.unsub()
	return nil
}

// Roots returns the server's root folders (absolute, symbolic links
// resolved), first root first.
func (s *Server) Roots() []string {
	out := make([]string, len(s.roots))
	for i, r := range s.roots {
		out[i] = r.real
	}
	return out
}

// root is a server root folder.
type root struct {
	dir  string // absolute, as given
	real string // symbolic links resolved
}

func newRoot(d string) (root, error) {
	abs, err := filepath.Abs(d)
	if err != nil {
		return root{}, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return root{}, err
	}
	return root{dir: abs, real: real}, nil
}
