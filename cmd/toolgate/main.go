// Command toolgate is the tool layer for LLM agents on the command line: it
// lists and calls governed tools, serves them over MCP, and checks the audit
// log. Run `toolgate --help` for the commands.
//
// It links no model vendor's SDK, so that it starts and serves lean;
// `toolgate run --provider openai|anthropic` runs toolgate-agent (the same
// commands with those SDKs), found beside this program or on PATH.
package main

import "github.com/toolgate/toolgate/internal/cli"

func main() { cli.Main(cli.Options{}) }
