package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxPromptArg caps one prompt argument (the code under review, say).
const maxPromptArg = 1 << 20

// addPrompts adds the built-in prompts.
func (s *Server) addPrompts() {
	s.mcp.AddPrompt(&mcp.Prompt{
		Name:        "code_review",
		Title:       "Code review",
		Description: "Review a piece of code for bugs, security problems, clarity and tests, with concrete fixes.",
		Arguments: []*mcp.PromptArgument{
			{Name: "language", Title: "Language", Description: "The programming language, e.g. Go or TypeScript", Required: true},
			{Name: "code", Title: "Code", Description: "The code to review", Required: true},
		},
	}, codeReview)
	s.mcp.AddPrompt(&mcp.Prompt{
		Name:        "explore_project",
		Title:       "Explore the project",
		Description: "Explore the workspace with the file tools and summarise its layout, purpose, build and tests.",
		Arguments: []*mcp.PromptArgument{
			{Name: "focus", Title: "Focus", Description: "Optional: a question or area to concentrate on, e.g. \"how requests are authenticated\""},
		},
	}, s.exploreProject)
}

func promptArg(req *mcp.GetPromptRequest, name string, required bool) (string, error) {
	v := req.Params.Arguments[name]
	if required && strings.TrimSpace(v) == "" {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompt %s needs the argument %q", req.Params.Name, name)}
	}
	if len(v) > maxPromptArg {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("argument %q is %d bytes, over the limit of %d", name, len(v), maxPromptArg)}
	}
	return v, nil
}

func codeReview(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	lang, err := promptArg(req, "language", true)
	if err != nil {
		return nil, err
	}
	code, err := promptArg(req, "code", true)
	if err != nil {
		return nil, err
	}
	fence := "```"
	for strings.Contains(code, fence) {
		fence += "`"
	}
	text := fmt.Sprintf(`Review this %s code as a careful senior engineer.

For each problem give: where (line or construct), what is wrong, why it matters, and the fix as code. Cover, in this order:
1. Bugs and wrong behaviour (edge cases, error handling, concurrency, resource leaks).
2. Security (untrusted input, injection, paths, secrets, permissions).
3. Clarity and simplicity (names, structure, dead code, comments that lie).
4. Tests: what is untested and the test you would add.
End with a one-paragraph verdict. Say so plainly if the code is fine.

%s%s
%s
%s`, lang, fence, strings.ToLower(strings.Fields(lang)[0]), code, fence)
	return &mcp.GetPromptResult{
		Description: "Code review of " + lang + " code",
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
	}, nil
}

func (s *Server) exploreProject(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	focus, err := promptArg(req, "focus", false)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("Explore this project with the file tools and explain it to a new contributor.\n\n")
	if roots := s.Roots(); len(roots) > 0 {
		fmt.Fprintf(&b, "The workspace: %s.\n\n", strings.Join(roots, ", "))
	}
	fmt.Fprintf(&b, `Steps:
1. %s the top folder (depth 2) to see the layout.
2. %s the README, the build files (go.mod, package.json, Makefile, …) and the main entry points.
3. Use search_files to follow the important names across files.
Then summarise: what the project does, how it is organised (one line per main folder), how to build and test it, and where to start for common changes. Quote file paths. Do not change any file.`, "List ("+s.opts.ListTool+")", "Read ("+s.opts.ReadTool+")")
	if strings.TrimSpace(focus) != "" {
		fmt.Fprintf(&b, "\n\nConcentrate on: %s", focus)
	}
	return &mcp.GetPromptResult{
		Description: "Explore the project",
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: b.String()}}},
	}, nil
}
