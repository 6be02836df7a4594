// Command toolgate-sandbox is the helper process of toolgate's command
// sandbox: toolgate starts it, in new namespaces, to build the sandbox and
// become the command. It does nothing on its own.
//
// toolgate uses it when it lies beside the toolgate program and comes from
// the same build (the same release, or the same clean commit); otherwise
// toolgate starts itself as the helper. Being small, it starts in a fraction
// of toolgate's time: each command starts tens of milliseconds sooner.
package main

import (
	"fmt"
	"os"

	"github.com/toolgate/toolgate/sandbox"
)

func main() {
	if sandbox.Init() {
		return
	}
	fmt.Fprintln(os.Stderr, "toolgate-sandbox is the helper of toolgate's command sandbox; toolgate starts it, it does nothing on its own")
	os.Exit(2)
}
