package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/trust"
)

func newScanCmd(s *streams) *cobra.Command {
	var configFile string
	var unisolated bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "scan FILE | --config FILE",
		Short: "Scan MCP tool definitions for poisoning: hidden instructions, out-of-scope parameters, look-alike names",
		Long: `toolgate scan reads every string of a tool definition that a model sees (name,
title, description, every nested property description, enum value, default,
example, const and title of the input and output schemas, annotations) and
reports what looks like an attack on the model rather than documentation.
It is deterministic and needs no model.

FILE is a JSON array of MCP tool definitions ({name, description, inputSchema,
…}), or a tools/list result ({"tools": [...]}); - reads standard input. The
tools of one file are each other's context: a tool whose name nearly collides
with another's, or that steers calls meant for another, is reported.
With --config, toolgate connects to the upstreams of a gateway configuration
(the file toolgate proxy --config reads), lists their tools and scans each with
every upstream's tools and server names as context.

One JSON line per tool:

  {"tool": NAME, "verdict": "clean"|"suspicious"|"malicious", "score": N,
   "findings": [{"kind", "field", "evidence", "why", "weight"}]}

field is a JSON pointer into the definition (/description,
/inputSchema/properties/note/description); evidence is the matched text,
short. Kinds: instruction (orders addressed to the model: call other tools,
run commands, keep things from the user, ignore its rules), sensitive_reference
(keys, tokens, ~/.ssh, .env, /etc/passwd), cross_tool (another tool or server
named or steered), preference_manipulation (superlatives, "always use this
tool", "do not use other tools"), out_of_scope_parameter (asks for the model's
name, its system prompt, the conversation, its tool list, credentials, personal
data), hidden_text (zero-width, tag and bidi characters, look-alike letters,
HTML comments, long white space, encoded blobs), exfiltration (URLs, e-mail
addresses, IPs, phone numbers the model is told to send to), name_collision
(a look-alike of another tool's or server's name).

Each finding weighs 1 (weak), 2 (medium) or 3-4 (strong); the verdict is the
sum (score): 4 or more is malicious, 2 or 3 suspicious, less clean. A clean
tool lists no findings: a weak one alone explains no verdict.

Exit status: 0 when the scan ran (whatever it found), 1 when the input cannot
be read (or an upstream cannot be reached), 2 for a usage error.`,
		Example: `  toolgate scan tools.json
  toolgate scan tools.json | jq -c 'select(.verdict != "clean")'
  curl -s … | jq .result | toolgate scan -
  toolgate scan --config docs/proxy.example.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var reps []trust.Report
			var err error
			switch {
			case configFile != "" && len(args) > 0:
				return usageErr("give FILE or --config FILE, not both")
			case configFile != "":
				reps, err = scanUpstreams(cmd.Context(), configFile, timeout, unisolated)
			case len(args) == 1:
				reps, err = scanFile(s.in, args[0])
			default:
				return usageErr("name a JSON file of tool definitions (- for standard input) or --config FILE")
			}
			if err != nil {
				return &exitError{exitTool, err}
			}
			enc := json.NewEncoder(s.out)
			enc.SetEscapeHTML(false)
			for _, r := range reps {
				if err := enc.Encode(r); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "a gateway configuration (as toolgate proxy --config): scan its upstreams' tools")
	cmd.Flags().BoolVar(&unisolated, "unisolated", false, "with --config: allow isolation.mode: off (the upstreams are started in their box otherwise, as toolgate proxy starts them)")
	cmd.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "with --config: bound on reaching and listing all upstreams")
	return cmd
}

// scanFile scans a JSON array of tool definitions as one set.
func scanFile(stdin io.Reader, name string) ([]trust.Report, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	defs, err := parseToolDefs(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return trust.ScanSet("", defs, nil), nil
}

// parseToolDefs reads a JSON array of tool definitions, or an object with a
// "tools" array (a tools/list result). An element that wraps its
// definition in a "tool" field (a labelled corpus record) is unwrapped.
func parseToolDefs(data []byte) ([]trust.ToolDef, error) {
	data = bytes.TrimSpace(data)
	var elems []json.RawMessage
	if len(data) > 0 && data[0] == '{' {
		var list struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("not JSON: %w", err)
		}
		if list.Tools == nil {
			return nil, fmt.Errorf(`an object without "tools": give a JSON array of tool definitions`)
		}
		elems = list.Tools
	} else if err := json.Unmarshal(data, &elems); err != nil {
		return nil, fmt.Errorf("not a JSON array of tool definitions: %w", err)
	}
	defs := make([]trust.ToolDef, len(elems))
	for i, e := range elems {
		var wrapped struct {
			Name *string         `json:"name"`
			Tool json.RawMessage `json:"tool"`
		}
		if err := json.Unmarshal(e, &wrapped); err != nil {
			return nil, fmt.Errorf("element %d is not a tool definition (a JSON object)", i)
		}
		if wrapped.Name == nil && len(wrapped.Tool) > 0 && wrapped.Tool[0] == '{' {
			e = wrapped.Tool
		}
		if err := json.Unmarshal(e, &defs[i]); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return defs, nil
}

// scanUpstreams connects to the upstreams of a gateway configuration, lists
// their tools as they send them, and scans each with all upstreams' tools
// and names as context.
func scanUpstreams(ctx context.Context, file string, timeout time.Duration, unisolated bool) ([]trust.Report, error) {
	cfgs, isos, err := loadProxyConfig(file)
	if err != nil {
		return nil, err
	}
	closeBoxes, _, err := boxUpstreams(proxySetup{cfgs: cfgs, isos: isos, boxDir: filepath.Dir(file), unisolated: unisolated}, "", "", nil)
	if err != nil {
		return nil, err
	}
	defer closeBoxes()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var ups []trust.Upstream
	for _, c := range cfgs {
		list, err := listUpstream(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("upstream %s: %w", c.Name, err)
		}
		ups = append(ups, trust.Upstream{Name: c.Name, Tools: list})
	}
	return trust.ScanUpstreams(ups), nil
}

// listUpstream returns the tools an upstream lists, as it sends them.
func listUpstream(ctx context.Context, c mcpclient.Config) ([]trust.ToolDef, error) {
	u, err := mcpclient.Connect(ctx, c, mcpclient.Options{})
	if err != nil {
		return nil, err
	}
	defer u.Close()
	cs, err := u.Session(ctx)
	if err != nil {
		return nil, err
	}
	var out []trust.ToolDef
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		var d trust.ToolDef
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
