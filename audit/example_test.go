package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/toolgate/toolgate/audit"
)

func Example() {
	dir, err := os.MkdirTemp("", "audit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "audit.jsonl")

	l, err := audit.Open(path, audit.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	l.Append(ctx, audit.Record{
		CallID: "call-1", Session: "s1", Principal: "alice", Tool: "read_file",
		Arguments: json.RawMessage(`{"path":"README.md"}`),
		Decision:  audit.DecisionAllow, Rule: "Read(*)",
		Duration: 1200 * time.Microsecond, Outcome: audit.OutcomeOK,
	})
	l.Append(ctx, audit.Record{
		CallID: "call-2", Session: "s1", Principal: "alice", Tool: "run",
		Arguments: json.RawMessage(`{"command":"rm -rf /"}`),
		Decision:  audit.DecisionDeny, Rule: "Run(rm *)",
		Outcome: audit.OutcomeDenied, ErrorType: "permission_denied",
	})
	if err := l.Close(); err != nil {
		log.Fatal(err)
	}

	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	rep, err := audit.Verify(f)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("records:", rep.Records, "ok:", rep.OK)

	last, _ := audit.Tail(f, 1)
	fmt.Println("last:", last[0].Tool, last[0].Decision, last[0].Outcome)
	// Output:
	// records: 2 ok: true
	// last: run deny denied
}
