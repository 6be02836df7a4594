// Command toolgate is the tool layer for LLM agents on the command line: it
// lists and calls governed tools, serves them over MCP, and checks the audit
// log. Run `toolgate --help` for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolgate/toolgate/sandbox"
)

func main() {
	if sandbox.Init() { // the process is a command sandbox's helper: it never returns
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
