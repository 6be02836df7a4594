package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// Set is the web tool set over one egress policy.
type Set struct {
	opts   Options
	client *http.Client
	cache  *cache // nil: no fallback
}

// New checks opts and returns the web tool set.
func New(opts Options) (*Set, error) {
	if opts.Policy == nil {
		return nil, errors.New("web: Options.Policy is required")
	}
	opts = opts.withDefaults()
	s := &Set{opts: opts}
	tr := &http.Transport{
		Proxy:                  nil, // never a proxy from the environment: the policy dials
		DialContext:            opts.Policy.DialContext,
		DisableKeepAlives:      true, // every request dials, so every request is checked and reported
		TLSHandshakeTimeout:    opts.Timeout,
		ResponseHeaderTimeout:  opts.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
	if opts.TLSConfig != nil {
		tr.TLSClientConfig = opts.TLSConfig.Clone()
	}
	s.client = &http.Client{Transport: tr} // no Jar: cookies are never kept
	if opts.CacheDir != "" {
		c, err := newCache(opts.CacheDir, opts.MaxCacheBytes)
		if err != nil {
			return nil, err
		}
		s.cache = c
	}
	return s, nil
}

// Tools is New followed by Set.Tools.
func Tools(opts Options) ([]tool.Tool, error) {
	s, err := New(opts)
	if err != nil {
		return nil, err
	}
	return s.Tools(), nil
}

// Tools returns the web tools (http_request), tagged "web".
func (s *Set) Tools() []tool.Tool { return []tool.Tool{s.httpRequestTool()} }

// RequestIn are http_request's arguments.
type RequestIn struct {
	URL     string            `json:"url" jsonschema:"absolute http:// or https:// URL, e.g. https://api.github.com/repos/golang/go" minLength:"1"`
	Method  string            `json:"method,omitempty" jsonschema:"HTTP method" enum:"GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS" default:"GET"`
	Headers map[string]string `json:"headers,omitempty" jsonschema:"request headers, e.g. {\"Accept\": \"application/json\"} (by default only User-Agent); Host, Content-Length, Connection and proxy headers are set by the tool"`
	Body    string            `json:"body,omitempty" jsonschema:"request body (text, e.g. JSON; if omitted, no body); set Content-Type in headers"`
}

// Response is what http_request returns.
type Response struct {
	URL        string            `json:"url" jsonschema:"the final URL, after redirects"`
	Status     int               `json:"status"`
	StatusText string            `json:"status_text"`
	Headers    map[string]string `json:"headers,omitempty" jsonschema:"response headers (Set-Cookie omitted)"`
	Body       string            `json:"body,omitempty" jsonschema:"the body as text, or a description of a binary body"`
	BodyBytes  int64             `json:"body_bytes"`
	Binary     bool              `json:"binary,omitempty" jsonschema:"the body is binary and only described"`
	Redirects  []string          `json:"redirects,omitempty" jsonschema:"URLs that redirected, in order"`
	Cached     bool              `json:"cached,omitempty" jsonschema:"the network failed; this is the last stored answer to the same GET"`
	AgeSeconds int64             `json:"age_seconds,omitempty" jsonschema:"age of the cached answer"`
	CacheNote  string            `json:"cache_note,omitempty" jsonschema:"why the cached answer was served"`
}

const description = "Make an HTTP request to an allow-listed domain and return the status, headers and body " +
	"(text and JSON as text; binary bodies are described, not shown). Redirects are followed (up to 5) and re-checked. " +
	"Internal and cloud-metadata addresses are always refused. When the network fails, a GET may be answered from " +
	"the last stored response, marked cached with its age.\n" +
	"Use it to call web APIs and fetch documents from the domains the policy allows. Do not use it for files in the " +
	"workspace (read_file) nor for local services: loopback and private addresses are refused.\n" +
	`Example: {"url": "https://api.github.com/repos/golang/go", "headers": {"Accept": "application/json"}}`

// httpRequestTool is built on first use (tool.Lazy): a process that runs
// another tool's call does not infer its schemas.
func (s *Set) httpRequestTool() tool.Tool {
	opts := []tool.Option{tool.WithTitle("HTTP request"), tool.WithLevel(tool.LevelMedium),
		tool.WithAnnotations(tool.Annotations{OpenWorld: true}), tool.WithTags("web")}
	return tool.Lazy(tool.HeadOf("http_request", description, opts...), func() tool.Tool {
		def := tool.New("http_request", description,
			func(context.Context, RequestIn) (Response, error) { return Response{}, nil }, opts...).Definition()
		return tool.Func(def, s.run)
	})
}

// forbiddenHeaders are set by the tool (or the transport), never by a call.
var forbiddenHeaders = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive",
	"Proxy-Authorization", "Proxy-Connection", "Proxy-Authenticate", "Te", "Trailer", "Upgrade", "Expect"}

// credentialHeaders are dropped when a redirect leaves the original host.
var credentialHeaders = []string{"Authorization", "Cookie", "Cookie2", "X-Api-Key", "Api-Key", "X-Auth-Token",
	"X-Access-Token", "X-Csrf-Token", "X-Xsrf-Token", "Private-Token", "X-Goog-Api-Key", "X-Amz-Security-Token"}

var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

func invalid(format string, args ...any) *tool.Error {
	return tool.Errorf(tool.InvalidArguments, format, args...)
}

// parseArgs decodes and checks the arguments; unknown members are refused.
func (s *Set) parseArgs(raw json.RawMessage) (RequestIn, *url.URL, http.Header, *tool.Error) {
	in := RequestIn{Method: "GET"}
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return in, nil, nil, invalid("http_request arguments: %v", err).
				WithSuggestion(`send {"url": "https://…", "method": "GET", "headers": {…}, "body": "…"}`)
		}
	}
	u, err := url.Parse(in.URL)
	switch {
	case err != nil || in.URL == "":
		return in, nil, nil, invalid("url %q is not a valid URL", in.URL).
			WithSuggestion("give an absolute URL, e.g. https://example.com/path")
	case u.Scheme != "http" && u.Scheme != "https":
		return in, nil, nil, invalid("url %q: only http and https URLs can be requested", in.URL).
			WithSuggestion("use an https:// URL")
	case u.Host == "" || u.Opaque != "":
		return in, nil, nil, invalid("url %q has no host", in.URL).
			WithSuggestion("give an absolute URL, e.g. https://example.com/path")
	case u.User != nil:
		return in, nil, nil, invalid("url %q carries user credentials", in.URL).
			WithSuggestion("remove user:password@ from the URL and send an Authorization header instead")
	}
	u.Fragment, u.RawFragment = "", ""
	in.Method = strings.ToUpper(in.Method)
	if !slices.Contains(methods, in.Method) {
		return in, nil, nil, invalid("method %q is not supported", in.Method).
			WithSuggestion("use one of %s", strings.Join(methods, ", "))
	}
	if s.opts.GetOnly && (in.Method != "GET" && in.Method != "HEAD" || in.Body != "") {
		return in, nil, nil, tool.Errorf(tool.PermissionDenied, "only GET and HEAD requests without a body are allowed here, not %s", in.Method).
			WithSuggestion("read with GET; changing remote state is not permitted by this configuration")
	}
	if len(in.Body) > s.opts.MaxRequestBytes {
		return in, nil, nil, tool.Errorf(tool.TooLarge, "the request body has %d bytes; the limit is %d", len(in.Body), s.opts.MaxRequestBytes).
			WithSuggestion("send a smaller body, e.g. split the upload into several requests")
	}
	h := http.Header{}
	names := make([]string, 0, len(in.Headers))
	for k := range in.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v := in.Headers[k]
		if !validHeaderName(k) || strings.ContainsAny(v, "\r\n\x00") {
			return in, nil, nil, invalid("header %q is not a valid HTTP header", k).
				WithSuggestion("header names are letters, digits and -; values may not contain line breaks")
		}
		ck := http.CanonicalHeaderKey(k)
		if slices.Contains(forbiddenHeaders, ck) || strings.HasPrefix(ck, "Proxy-") {
			return in, nil, nil, invalid("header %s is set by the tool and may not be given", ck).
				WithSuggestion("remove it from headers")
		}
		h.Set(ck, v)
	}
	if h.Get("User-Agent") == "" {
		h.Set("User-Agent", s.opts.UserAgent)
	}
	return in, u, h, nil
}

func validHeaderName(k string) bool {
	if k == "" || len(k) > 256 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func (s *Set) run(ctx context.Context, call tool.Call) (tool.Result, error) {
	in, u, h, te := s.parseArgs(call.Args)
	if te != nil {
		return tool.ErrorResult(te), nil
	}
	resp, te := s.do(ctx, in, u, h)
	if te != nil {
		if in.Method == "GET" && s.cache != nil && (te.Type == tool.Unavailable || te.Type == tool.Timeout) {
			if e, ok := s.cache.get(cacheKey(u.String(), h)); ok {
				r := e.Response
				age := time.Since(e.StoredAt).Round(time.Second)
				r.Cached, r.AgeSeconds = true, int64(age/time.Second)
				r.CacheNote = "the network failed (" + te.Message + "); this is the answer stored " + age.String() + " ago"
				return result(r), nil
			}
		}
		return tool.ErrorResult(te), nil
	}
	res := result(resp.Response)
	if in.Method == "GET" && s.cache != nil && resp.Status >= 200 && resp.Status < 300 && !resp.noStore {
		if err := s.cache.put(cacheKey(u.String(), h), entry{Response: resp.Response, StoredAt: time.Now()}); err != nil {
			res.SetMeta("cache_error", err.Error()) // the answer stands; only the fallback copy is missing
		}
	}
	return res, nil
}

// fetched is a response and whether it may be stored.
type fetched struct {
	Response
	noStore bool
}

// do makes the request, following redirects, and reads the body.
func (s *Set) do(ctx context.Context, in RequestIn, u *url.URL, h http.Header) (fetched, *tool.Error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	var body io.Reader
	if in.Body != "" {
		body = strings.NewReader(in.Body)
	}
	req, err := http.NewRequestWithContext(ctx, in.Method, u.String(), body)
	if err != nil {
		return fetched{}, invalid("cannot build the request: %v", err).WithSuggestion("check the URL and method")
	}
	req.Header = h.Clone()
	var redirects []string
	current := u.String()
	origin := u.Host
	client := *s.client
	client.CheckRedirect = func(next *http.Request, via []*http.Request) error {
		prev := via[len(via)-1].URL
		redirects = append(redirects, prev.String())
		current = next.URL.String()
		switch {
		case len(via) > s.opts.MaxRedirects:
			return errTooManyRedirects
		case next.URL.Scheme != "http" && next.URL.Scheme != "https":
			return errRedirectScheme
		case next.URL.User != nil:
			return errRedirectUser
		case prev.Scheme == "https" && next.URL.Scheme == "http":
			return errDowngrade
		}
		if next.URL.Host != origin {
			for _, k := range credentialHeaders {
				next.Header.Del(k)
			}
		}
		return nil
	}
	resp, err := client.Do(req)
	if err != nil {
		return fetched{}, s.failure(err, current, len(redirects))
	}
	defer resp.Body.Close()
	out := fetched{Response: Response{URL: resp.Request.URL.String(), Status: resp.StatusCode,
		StatusText: strings.TrimSpace(strings.TrimPrefix(resp.Status, fmt.Sprint(resp.StatusCode))),
		Headers:    map[string]string{}, Redirects: redirects}}
	for k, v := range resp.Header {
		if k != "Set-Cookie" && k != "Set-Cookie2" {
			out.Headers[k] = strings.Join(v, ", ")
		}
	}
	out.noStore = strings.Contains(strings.ToLower(resp.Header.Get("Cache-Control")), "no-store")
	max := s.opts.MaxResponseBytes
	if resp.ContentLength > max {
		return fetched{}, s.tooLarge(out.URL, resp.ContentLength)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return fetched{}, s.failure(err, out.URL, len(redirects))
	}
	if int64(len(data)) > max {
		return fetched{}, s.tooLarge(out.URL, -1)
	}
	out.BodyBytes = int64(len(data))
	out.Body, out.Binary = renderBody(data, resp.Header.Get("Content-Type"))
	return out, nil
}

func (s *Set) tooLarge(u string, size int64) *tool.Error {
	what := fmt.Sprintf("more than %d bytes", s.opts.MaxResponseBytes)
	if size >= 0 {
		what = fmt.Sprintf("%d bytes", size)
	}
	return tool.Errorf(tool.TooLarge, "%s: the response body has %s; the limit is %d", u, what, s.opts.MaxResponseBytes).
		WithSuggestion("ask for less: a query parameter that filters or paginates (e.g. ?per_page=20), a Range header (e.g. \"bytes=0-65535\"), or HEAD to see the size first").
		WithDetail("limit_bytes", s.opts.MaxResponseBytes)
}

// result renders a response for the model: a status line, the main
// headers, then the body.
func result(r Response) tool.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d %s — %s\n", r.Status, r.StatusText, r.URL)
	if r.Cached {
		fmt.Fprintf(&b, "(cached: %s)\n", r.CacheNote)
	}
	for _, k := range []string{"Content-Type", "Content-Length", "Location", "Last-Modified", "Retry-After"} {
		if v, ok := r.Headers[k]; ok {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	if len(r.Redirects) > 0 {
		fmt.Fprintf(&b, "Redirected from: %s\n", strings.Join(r.Redirects, " → "))
	}
	if r.Body != "" {
		b.WriteString("\n")
		b.WriteString(r.Body)
	}
	res := tool.Result{Content: []tool.Content{tool.TextContent(b.String())}, Structured: r}
	if r.Cached {
		res.SetMeta("cached", true)
		res.SetMeta("age_seconds", r.AgeSeconds)
	}
	return res
}
