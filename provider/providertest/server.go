package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Call is a tool call a scripted model makes.
type Call struct {
	ID   string // "" for one made up in the vendor's style
	Name string
	// Arguments are sent as they are: OpenAI's arguments string, the bytes
	// of Anthropic's streamed input_json_delta pieces. Where the wire wants
	// an object (Anthropic's non-streamed input, Gemini's args), valid JSON
	// is embedded as it is and anything else as a JSON string.
	Arguments string
}

// Turn is one scripted reply.
type Turn struct {
	Text  string
	Calls []Call
	// Status, when not 0 or 200, answers with this HTTP status and the
	// vendor's error body carrying Text as the message.
	Status int
	// Raw, when set, is served as it is (SSE when it starts with "event:"
	// or "data:", else JSON).
	Raw string
	// Hold makes the server wait for the client to go away before
	// answering (for cancellation tests).
	Hold bool
}

// Request is one request the server received.
type Request struct {
	Path   string
	Query  string
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// Server is a scripted model API on loopback.
type Server struct {
	URL string // e.g. http://127.0.0.1:PORT

	srv    *httptest.Server
	mu     sync.Mutex
	turns  []Turn
	next   int
	repeat bool
	reqs   []Request
	hook   func()
}

// OnRequest calls fn (once) when the next request has been recorded.
func (s *Server) OnRequest(fn func()) { s.mu.Lock(); s.hook = fn; s.mu.Unlock() }

// New starts a server that answers with turns, one per request.
func New(turns ...Turn) *Server {
	s := &Server{turns: turns}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// RepeatLast makes the last turn the answer to every request after it.
func (s *Server) RepeatLast() { s.mu.Lock(); s.repeat = true; s.mu.Unlock() }

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	req := Request{Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Raw: raw}
	json.Unmarshal(raw, &req.Body)
	s.mu.Lock()
	n := s.next
	s.reqs = append(s.reqs, req)
	var t Turn
	ok := n < len(s.turns)
	if ok {
		t = s.turns[n]
		s.next++
	} else if s.repeat && len(s.turns) > 0 {
		t, ok = s.turns[len(s.turns)-1], true
	}
	hook := s.hook
	s.hook = nil
	s.mu.Unlock()
	if hook != nil {
		hook()
	}

	api := apiOf(r.URL.Path)
	if r.Method != http.MethodPost || api == "" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if !ok {
		t = Turn{Status: http.StatusInternalServerError, Text: fmt.Sprintf("the script has no turn %d", n+1)}
	}
	if t.Hold {
		<-r.Context().Done()
		return
	}
	if t.Raw != "" {
		if strings.HasPrefix(t.Raw, "event:") || strings.HasPrefix(t.Raw, "data:") {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		io.WriteString(w, t.Raw)
		return
	}
	if t.Status != 0 && t.Status != http.StatusOK {
		writeError(w, api, t.Status, t.Text)
		return
	}
	stream := req.Body["stream"] == true || strings.Contains(r.URL.Path, ":streamGenerateContent")
	id := n + 1
	switch api {
	case "chat":
		if stream {
			sse(w, chatChunks(t, id))
		} else {
			writeJSON(w, chatCompletion(t, id))
		}
	case "responses":
		if stream {
			sse(w, responseEvents(t, id))
		} else {
			writeJSON(w, response(t, id))
		}
	case "anthropic":
		if stream {
			sse(w, anthropicEvents(t, id))
		} else {
			writeJSON(w, anthropicMessage(t, id))
		}
	case "gemini":
		if stream {
			sse(w, geminiChunks(t, id))
		} else {
			writeJSON(w, geminiResponse(t, id))
		}
	}
}

func apiOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return "chat"
	case strings.HasSuffix(path, "/responses"):
		return "responses"
	case strings.HasSuffix(path, "/v1/messages"):
		return "anthropic"
	case strings.Contains(path, "/models/") && (strings.HasSuffix(path, ":generateContent") || strings.HasSuffix(path, ":streamGenerateContent")):
		return "gemini"
	}
	return ""
}

// event is one server-sent event; name "" sends data only.
type event struct {
	name string
	data any
}

func sse(w http.ResponseWriter, events []event) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	f, _ := w.(http.Flusher)
	for _, e := range events {
		var b bytes.Buffer
		if e.name != "" {
			b.WriteString("event: " + e.name + "\n")
		}
		if s, ok := e.data.(string); ok {
			b.WriteString("data: " + s + "\n\n")
		} else {
			d, _ := json.Marshal(e.data)
			b.WriteString("data: " + string(d) + "\n\n")
		}
		w.Write(b.Bytes())
		if f != nil {
			f.Flush()
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, api string, status int, msg string) {
	var body any
	switch api {
	case "anthropic":
		body = obj{"type": "error", "error": obj{"type": "api_error", "message": msg}}
	case "gemini":
		body = obj{"error": obj{"code": status, "message": msg, "status": "INTERNAL"}}
	default:
		body = obj{"error": obj{"message": msg, "type": "server_error", "param": nil, "code": nil}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

type obj = map[string]any

// pieces cuts s into pieces of at most n bytes (at least one piece).
func pieces(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// asObject embeds valid JSON as it is and anything else as a string.
func asObject(args string) json.RawMessage {
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(args)
	return b
}

var created = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

func callID(c Call, prefix string, turn, i int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("%s%d_%d", prefix, turn, i)
}
