// Command toolserver is a stdio MCP server for toolgate's tests that lists
// exactly the tool definitions of a JSON file (an array of MCP tools), as
// written: a stand-in for an upstream with poisoned or look-alike tools.
// Every call answers "ok".
//
//	toolserver TOOLS.json
package main

import (
	"context"
	"encoding/json"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: toolserver TOOLS.json")
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	var tools []*mcp.Tool
	if err := json.Unmarshal(data, &tools); err != nil {
		log.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "toolserver", Version: "test"}, nil)
	for _, t := range tools {
		s.AddTool(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
