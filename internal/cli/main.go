package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolgate/toolgate/agent"
	"github.com/toolgate/toolgate/internal/heapfloor"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/tool"
)

// Options are what a program adds to the shared commands.
type Options struct {
	// Models starts a conversation with a model API the program links a
	// vendor SDK for ("openai", "anthropic"); nil in the lean program,
	// whose `run` then hands those providers to toolgate-agent. Its errors
	// are the user's to fix (a missing key, an unknown --api): exit 2.
	Models func(ModelRequest) (agent.Model, error)
}

// ModelRequest is what `toolgate run` asks of Options.Models.
type ModelRequest struct {
	Provider, API, BaseURL, Model, System, ToolChoice string
	Strict, Stream                                    bool
	Tools                                             []tool.Definition
}

// heapFloor is how much garbage the programs may make between two cycles
// of the collector at least (internal/heapfloor): 32 MiB more heap at most,
// for a fifth fewer instructions per read_process through serve --http.
const heapFloor = 32 << 20

// Main runs the command line of os.Args and exits with its status. A
// process started as a command sandbox's helper becomes that helper first
// (sandbox.Init), before anything else; toolgate serve then starts itself
// again with a setting of the runtime (quietSysmon; toolgate proxy does not
// where its audit log makes raw system calls, see sysmon.go), and the
// collector gets its floor (heapFloor).
func Main(o Options) {
	if sandbox.Init() {
		return
	}
	quietSysmon() // toolgate serve starts again with a setting of the runtime
	heapfloor.Keep(heapFloor)
	// The relay of the signals is not stopped before os.Exit: stopping it
	// wakes the runtime's signal thread (a thread more, to end at once).
	ctx, _ := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, o))
}
