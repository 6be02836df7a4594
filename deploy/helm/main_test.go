package helm_test

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate/sandbox"
)

// TestMain lets this test binary be the command sandbox's helper too
// (TestUsernsSeccompProfile runs the sandbox under the chart's profile).
func TestMain(m *testing.M) {
	if sandbox.Init() {
		return
	}
	os.Exit(m.Run())
}
