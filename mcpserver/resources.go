package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/tool"
)

// fileTemplate is the resource template of every file.
const fileTemplate = "file:///{+path}"

// readWindow is how many lines one read_file call of a resource asks for.
const readWindow = 2000

// addResources offers each root as a directory resource and files through
// the file template.
func (s *Server) addResources() error {
	if len(s.roots) == 0 {
		return nil
	}
	for _, r := range s.roots {
		s.mcp.AddResource(&mcp.Resource{
			URI:         fileURI(r.dir),
			Name:        filepath.Base(r.dir),
			Title:       "Workspace root " + filepath.Base(r.dir),
			Description: fmt.Sprintf("A folder the tools work in (%s). Reading it lists its entries; read its files through the file:// template.", r.dir),
			MIMEType:    "inode/directory",
		}, s.readResource)
	}
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: fileTemplate,
		Name:        "file",
		Title:       "File in a workspace root",
		Description: "A text file inside one of the root folders, by absolute path (file:///abs/path). Reads are governed like read_file: policy, confinement to the roots and audit apply.",
		MIMEType:    "text/plain",
	}, s.readResource)
	return nil
}

// readResource reads a file or lists a folder through the engine.
func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	p, ok := fileURIPath(uri)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%q is not a file:// URI of an absolute path", uri)}
	}
	st := s.state(req.Session)
	call := func(name string, args map[string]any) tool.Result {
		c := s.caller(req.Session, req.Extra, req.Params.GetMeta())
		c.Name = name
		c.Args, _ = json.Marshal(args)
		return s.execute(ctx, st, c, inputCall{})
	}
	for _, r := range s.roots {
		if p == r.dir || p == r.real {
			res := call(s.opts.ListTool, map[string]any{"path": p})
			if res.Error != nil {
				return nil, resourceError(uri, res.Error)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: res.Text()}}}, nil
		}
	}
	var b strings.Builder
	offset, truncated := 1, false
	for {
		res := call(s.opts.ReadTool, map[string]any{"path": p, "offset": offset, "limit": readWindow})
		if res.Error != nil {
			return nil, resourceError(uri, res.Error)
		}
		next, more := appendLines(&b, res, offset)
		if !more {
			break
		}
		if b.Len() >= s.opts.MaxResourceBytes || next <= offset {
			truncated = true
			break
		}
		offset = next
	}
	text := b.String()
	if truncated {
		text += fmt.Sprintf("\n[resource truncated at %d bytes; read the rest with read_file and an offset of %d]", len(text), offset)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
}

// appendLines appends the lines of a read_file window ("N|text" lines from
// offset on) to b, stopping at a line the output budget may have cut. It
// returns the next line to read and whether the file goes on.
func appendLines(b *strings.Builder, res tool.Result, offset int) (int, bool) {
	text := res.Text()
	// read_file says "truncated": bool; the engine's output budget records
	// a map there when it cut the text.
	_, ownFlag := res.Meta["truncated"].(bool)
	budgetCut := res.Meta["truncated"] != nil && !ownFlag
	type line struct {
		n    int
		text string
	}
	var lines []line
	for _, l := range strings.Split(text, "\n") {
		num, rest, ok := strings.Cut(l, "|")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n != offset+len(lines) {
			continue
		}
		lines = append(lines, line{n, rest})
	}
	if budgetCut && len(lines) > 0 {
		lines = lines[:len(lines)-1] // possibly cut in the middle
	}
	for _, l := range lines {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	next := offset + len(lines)
	total, ok := number(res.Meta["total_lines"])
	if !ok {
		return next, false
	}
	return next, next <= total
}

// number reads a numeric metadata value.
func number(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

// resourceError turns a failed read into a JSON-RPC error: not_found is
// MCP's resource-not-found, anything else an invalid request with the
// model-facing text and the structured error as data.
func resourceError(uri string, e *tool.Error) error {
	if e.Type == tool.NotFound {
		return mcp.ResourceNotFoundError(uri)
	}
	data, _ := json.Marshal(e)
	code := int64(jsonrpc.CodeInvalidParams)
	if e.Type == tool.Internal || e.Type == tool.Unavailable {
		code = jsonrpc.CodeInternalError
	}
	return &jsonrpc.Error{Code: code, Message: e.Text(), Data: data}
}
