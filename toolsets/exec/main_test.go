package exec

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate/sandbox"
)

// TestMain lets the test binary serve as the sandbox helper.
func TestMain(m *testing.M) {
	if sandbox.Init() {
		return
	}
	os.Exit(m.Run())
}
