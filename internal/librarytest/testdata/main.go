// The program of TestUpstreamModules' consumer module: toolgate as a
// library, built against upstream go-sdk and jsonschema. A gateway
// (mcpclient, the engine, mcpserver) in front of a toolgate server over
// loopback HTTP, and an upstream go-sdk client of the gateway: each
// fallback of the patched modules' methods runs (no relay kept by
// mcpclient, the whole result encoded by the SDK and the call logged
// through Log by mcpserver, schemas checked against the meta-schema by
// schema). It prints "ok" and exits 0, or says what failed and exits 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"reflect"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/tool"
)

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum  int    `json:"sum"`
	Note string `json:"note"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func run() error {
	// The modules are upstream's: the patched methods are missing.
	if _, ok := any(&mcp.CallToolResult{}).(interface{ DecodedJSON() []byte }); ok {
		return errors.New("go-sdk is the patched copy, not upstream's")
	}
	if _, ok := any(jsonschema.NewCompiler()).(interface{ SkipMetaValidation() }); ok {
		return errors.New("jsonschema is the patched copy, not upstream's")
	}

	// schema: a schema the meta-schema refuses is refused, another compiles.
	if _, err := schema.Compile(json.RawMessage(`{"type":"object","properties":{"a":{"type":"nope"}}}`)); !errors.Is(err, schema.ErrInvalidSchema) {
		return fmt.Errorf("schema.Compile of an invalid schema: %v", err)
	}
	if _, err := schema.Compile(json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer","minimum":1}},"required":["a"]}`)); err != nil {
		return fmt.Errorf("schema.Compile: %w", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The upstream: a toolgate server of one tool over loopback HTTP.
	reg := registry.New()
	add := tool.New("add", "Adds two integers.", func(_ context.Context, in addIn) (addOut, error) {
		return addOut{Sum: in.A + in.B, Note: "<sum> & \"quotes\" é\n"}, nil
	}, tool.ReadOnly())
	if err := reg.Register(add); err != nil {
		return err
	}
	up, err := mcpserver.New(mcpserver.Options{Engine: engine.New(engine.Options{Registry: reg, Policy: policy.Default()}), NoCallLog: true})
	if err != nil {
		return err
	}
	defer up.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: up.Handler(mcpserver.HTTPOptions{Loopback: true})}
	go hs.Serve(ln)
	defer hs.Close()

	// The gateway: mcpclient, the engine, mcpserver.
	u, err := mcpclient.Connect(ctx, mcpclient.Config{Name: "up", URL: "http://" + ln.Addr().String() + "/mcp"}, mcpclient.Options{})
	if err != nil {
		return fmt.Errorf("mcpclient.Connect: %w", err)
	}
	defer u.Close()
	greg := registry.New()
	if err := greg.Register(u.Tools()...); err != nil {
		return err
	}
	gw, err := mcpserver.New(mcpserver.Options{Engine: engine.New(engine.Options{Registry: greg, Policy: policy.Default()})})
	if err != nil {
		return err
	}
	defer gw.Close()
	ct, st := mcp.NewInMemoryTransports()
	go gw.Run(ctx, st)

	// A client of the gateway, which logs at info (protocol 2025-11-25: in
	// 2026-07-28 a request carries its log level).
	logs := make(chan *mcp.LoggingMessageParams, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "consumer", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params },
	})
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("connect to the gateway: %w", err)
	}
	defer cs.Close()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		return err
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__add", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil {
		return fmt.Errorf("call up__add: %w", err)
	}
	want := map[string]any{"sum": 5.0, "note": "<sum> & \"quotes\" é\n"}
	if res.IsError || !reflect.DeepEqual(res.StructuredContent, want) {
		return fmt.Errorf("up__add answered %+v, structured %#v", res, res.StructuredContent)
	}
	var text map[string]any
	if len(res.Content) != 1 || json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &text) != nil || !reflect.DeepEqual(text, want) {
		return fmt.Errorf("up__add answered the content %+v", res.Content)
	}
	select {
	case l := <-logs:
		if d, _ := l.Data.(map[string]any); l.Logger != "toolgate" || d["tool"] != "up__add" || d["outcome"] != "ok" {
			return fmt.Errorf("the call was logged as %+v", l)
		}
	case <-ctx.Done():
		return errors.New("the call was not logged")
	}

	// Arguments the tool's schema refuses: the engine's structured error.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__add", Arguments: map[string]any{"a": "two"}})
	if err != nil {
		return fmt.Errorf("call up__add: %w", err)
	}
	if e, _ := res.StructuredContent.(map[string]any); !res.IsError || e["type"] != string(tool.InvalidArguments) {
		return fmt.Errorf("up__add with a string answered %+v, structured %#v", res, res.StructuredContent)
	}
	return nil
}
