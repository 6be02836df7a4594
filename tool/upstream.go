package tool

import (
	"fmt"
	"regexp"
	"sync"
)

// upstreamTypes are the types an upstream tool's error may have: not
// input_required nor auth_required, which would have the gateway ask its
// client's user a question, or send them to a sign-in page, of the
// upstream's choosing.
var upstreamTypes = map[ErrorType]bool{
	InvalidArguments: true, UnknownTool: true, PermissionDenied: true, ApprovalDenied: true,
	RateLimited: true, LoopDetected: true, CircuitOpen: true, NotFound: true, Conflict: true, Timeout: true,
	TooLarge: true, Unavailable: true, SandboxViolation: true, Internal: true,
}

// UpstreamErrorType reports whether an upstream tool (an MCP server
// behind a gateway, a sandbox's runner) may give its error type t.
func UpstreamErrorType(t ErrorType) bool { return upstreamTypes[t] }

// UnknownContent is the text that stands for a content block of a type
// toolgate does not pass on (its type is not said: an upstream chose it).
const UnknownContent = "[content of an unknown type left out]"

// VetUpstream makes r, the result of tool name as an upstream toolgate
// does not trust sent it (an MCP server's, a sandbox runner's), one that
// a tool could produce: a content block of a type other than text, image,
// audio or resource is left out (UnknownContent says so). A failed
// result's error gets a type an upstream may give: one outside
// UpstreamErrorType is internal, its message kept; a missing type is told
// by the error's wording. A missing message is the result's text, or says
// that the tool failed without saying why; the text blocks are then left
// out (the message holds them).
func VetUpstream(name string, r Result) Result {
	copied := false
	for i, c := range r.Content {
		switch c.Type {
		case "text", "image", "audio", "resource":
			continue
		}
		if !copied { // the caller's blocks stay as they are
			r.Content, copied = append([]Content(nil), r.Content...), true
		}
		r.Content[i] = TextContent(UnknownContent)
	}
	if r.Error == nil {
		return r
	}
	e := *r.Error
	if e.Message == "" {
		e.Message = r.Text()
	}
	switch {
	case e.Type == "":
		e.Type = Internal
		for _, w := range errorWords() {
			if w.re.MatchString(e.Message) {
				e.Type = w.t
				break
			}
		}
		switch e.Type {
		case Timeout, RateLimited:
			e.Retryable = true
		case Internal:
			e.Suggestion = "the upstream tool failed; read its message, and try other arguments or another tool"
		}
	case !UpstreamErrorType(e.Type):
		e.Type, e.Details = Internal, nil
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("upstream tool %s failed without saying why", name)
	}
	r.Error, r.Content = &e, nonText(r.Content)
	return r
}

// nonText keeps the blocks other than text; nil when none.
func nonText(cs []Content) []Content {
	var out []Content
	for _, c := range cs {
		if c.Type != "text" {
			out = append(out, c)
		}
	}
	return out
}

// errorWords are the wordings of upstream errors, for a type when the
// upstream gives none, compiled on first use (most programs that link the
// package never see an upstream error).
var errorWords = sync.OnceValue(func() []errorWord {
	return []errorWord{
		{regexp.MustCompile(`(?i)\b(not found|no such file|does not exist|ENOENT)\b`), NotFound},
		{regexp.MustCompile(`(?i)\b(access denied|permission denied|not allowed|forbidden|outside (of )?(the )?allowed|EACCES|EPERM|unauthori[sz]ed)\b`), PermissionDenied},
		{regexp.MustCompile(`(?i)\b(timed out|timeout|ETIMEDOUT)\b`), Timeout},
		{regexp.MustCompile(`(?i)\b(already exists|EEXIST|conflict)\b`), Conflict},
		{regexp.MustCompile(`(?i)\b(rate limit|too many requests)\b`), RateLimited},
		{regexp.MustCompile(`(?i)\b(invalid (arguments?|params|parameters|input)|validation (error|failed)|required property|is required|must be)\b`), InvalidArguments},
	}
})

type errorWord struct {
	re *regexp.Regexp
	t  ErrorType
}
