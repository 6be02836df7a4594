package mcpserver

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/tool"
)

// session is what the server remembers about one MCP session.
type session struct {
	ss *mcp.ServerSession
	id string

	mu       sync.Mutex
	gen      int      // bumped by roots/list_changed
	known    bool     // narrowed and allowed are up to date
	narrowed bool     // the client offers roots
	allowed  []string // client roots ∩ server roots, real paths

	loggers map[string]*slog.Logger // tool name → its tool.Logger, made on first call

	calls atomic.Int64 // tools/calls so far (callTool grows the stack of the first few)
}

// state returns the session's record, creating it on first use; it is
// dropped when the session ends.
func (s *Server) state(ss *mcp.ServerSession) *session {
	if v, ok := s.sessions.Load(ss); ok {
		return v.(*session)
	}
	st := &session{ss: ss, id: ss.ID()}
	if st.id == "" { // stdio and other transports without session ids
		st.id = "stdio-" + strings.ToLower(rand.Text()[:16])
	}
	v, loaded := s.sessions.LoadOrStore(ss, st)
	if !loaded {
		go func() {
			ss.Wait()
			s.sessions.Delete(ss)
			if s.opts.OnSessionEnd != nil {
				s.opts.OnSessionEnd(st.id)
			}
		}()
	}
	return v.(*session)
}

// caller is who makes a request: the principal and credential a bearer
// token middleware verified (package auth puts them in the go-sdk's
// TokenInfo), else the client's self-declared name without a credential.
//
// Its Session is the MCP session's id; an HTTP request without one
// (stateless HTTP) has no session to count under, so it takes the
// conversation the client names in meta (ConversationMeta) instead, and
// with none, "": the principal's session-free calls then count together
// (one loop guard and denial breaker per principal, never one per request).
func (s *Server) caller(ss *mcp.ServerSession, extra *mcp.RequestExtra, meta mcp.Meta) tool.Call {
	return s.callerIn(ss, nil, extra, meta)
}

// callerIn is caller given ss's state st (s.state(ss)) when the caller has
// it already (a tools/call), or nil: it is then looked up where needed.
func (s *Server) callerIn(ss *mcp.ServerSession, st *session, extra *mcp.RequestExtra, meta mcp.Meta) tool.Call {
	var call tool.Call
	switch {
	case ss == nil:
	case ss.ID() == "" && extra != nil && extra.Header != nil:
		call.Session = conversation(meta)
	default:
		if st == nil {
			st = s.state(ss)
		}
		call.Session = st.id
	}
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		if cred, ok := extra.TokenInfo.Extra[tool.CredentialKey].(*tool.Credential); ok {
			c := *cred
			call.Principal, call.Auth = extra.TokenInfo.UserID, &c
			return call
		}
	}
	call.Principal = "mcp-client"
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
			call.Principal = ip.ClientInfo.Name
		}
	}
	return call
}

// ConversationMeta is the params._meta key by which a client of stateless
// HTTP names its conversation, e.g. {"toolgate/conversation": "chat-42"}.
const ConversationMeta = "toolgate/conversation"

// maxConversation bounds a conversation id (bytes).
const maxConversation = 128

// conversation returns the session a stateless request counts under:
// "conversation:" and the id the client names, or "" when it names none or
// one that is not a printable UTF-8 string of at most 128 bytes (the stricter
// key: the principal's whole traffic).
func conversation(meta mcp.Meta) string {
	id, _ := meta[ConversationMeta].(string)
	if id == "" || len(id) > maxConversation || !utf8.ValidString(id) {
		return ""
	}
	for _, r := range id {
		if !unicode.IsPrint(r) {
			return ""
		}
	}
	return "conversation:" + id
}

// logger returns the logger a tool's calls in this session get
// (tool.Logger): its records become log notifications named for the tool.
// There is one per tool served, made on the tool's first call.
func (st *session) logger(name string) *slog.Logger {
	st.mu.Lock()
	defer st.mu.Unlock()
	l := st.loggers[name]
	if l == nil {
		if st.loggers == nil {
			st.loggers = map[string]*slog.Logger{}
		}
		l = slog.New(mcp.NewLoggingHandler(st.ss, &mcp.LoggingHandlerOptions{LoggerName: name}))
		st.loggers[name] = l
	}
	return l
}

func (st *session) invalidateRoots() {
	st.mu.Lock()
	st.gen++
	st.known = false
	st.mu.Unlock()
}

// rootlessProtocol is the first protocol version in which a server may no
// longer ask for the client's roots (SEP-2575, SEP-2577).
const rootlessProtocol = "2026-07-28"

// rootsTimeout bounds a roots/list request to the client.
const rootsTimeout = 30 * time.Second

// narrowing returns the folders this session may touch and whether client
// roots narrow the server's at all (false: the server roots apply as they
// are).
func (s *Server) narrowing(ctx context.Context, st *session) ([]string, bool) {
	ip := st.ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.RootsV2 == nil || ip.ProtocolVersion >= rootlessProtocol {
		return nil, false
	}
	st.mu.Lock()
	if st.known {
		defer st.mu.Unlock()
		return st.allowed, st.narrowed
	}
	gen := st.gen
	st.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, rootsTimeout)
	defer cancel()
	var client []string
	narrowed := true
	res, err := st.ss.ListRoots(ctx, nil)
	switch {
	case err != nil:
		s.log.Warn("roots/list failed; the session may touch no path", "session", st.id, "err", err)
	case len(res.Roots) == 0:
		narrowed = false // the client has opened no folder: nothing to narrow to
	default:
		for _, r := range res.Roots {
			if p, ok := fileURIPath(r.URI); ok {
				if real, err := filepath.EvalSymlinks(p); err == nil {
					client = append(client, real)
				}
			}
		}
	}
	allowed := intersect(client, s.Roots())
	if allowed == nil {
		allowed = []string{}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.gen == gen && err == nil {
		st.known, st.narrowed, st.allowed = true, narrowed, allowed
	}
	return allowed, narrowed
}

// intersect returns, for every pair of a client and a server folder of
// which one contains the other, the deeper one.
func intersect(client, server []string) []string {
	var out []string
	add := func(d string) {
		for _, o := range out {
			if o == d {
				return
			}
		}
		out = append(out, d)
	}
	for _, c := range client {
		for _, sv := range server {
			switch {
			case within(c, sv):
				add(c)
			case within(sv, c):
				add(sv)
			}
		}
	}
	return out
}

// fileURIPath returns the local path of a file:// URI.
func fileURIPath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	p := u.Path
	if runtime.GOOS == "windows" {
		p = strings.TrimPrefix(p, "/")
	}
	p = filepath.FromSlash(p)
	if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return "", false
	}
	return filepath.Clean(p), true
}

// fileURI returns the file:// URI of an absolute path.
func fileURI(p string) string {
	p = filepath.ToSlash(p)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// within reports whether path p is dir or inside it, comparing whole
// components of clean absolute paths (never a string prefix).
func within(p, dir string) bool {
	if filepath.VolumeName(p) != filepath.VolumeName(dir) {
		return false
	}
	pp, dp := components(p), components(dir)
	if len(pp) < len(dp) {
		return false
	}
	for i := range dp {
		if pp[i] != dp[i] {
			return false
		}
	}
	return true
}

// components splits a clean absolute path into its names.
func components(p string) []string {
	p = filepath.Clean(p)
	p = p[len(filepath.VolumeName(p)):]
	var out []string
	for _, c := range strings.Split(p, string(filepath.Separator)) {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}
