package policy

import (
	"context"
	"time"
)

// ProcessBoard is where the replicas of a server tell each other of the
// processes start_process runs (package exec): each process's entry
// (owner, replica, state) and the last of its output, under a lease its
// replica renews, so that a call for the process that lands on another
// replica is answered. The store package's RedisProcesses keeps it in the
// state.redis the replicas share.
type ProcessBoard interface {
	// Renew holds replica's lease for ttl more: while it holds, the
	// replica's running processes are running; once it expires they are
	// lost.
	Renew(ctx context.Context, replica string, ttl time.Duration) error
	// Put writes an entry; it stays keep after its last Put. An entry
	// that a reader found lost stays lost.
	Put(ctx context.Context, e ProcessEntry, keep time.Duration) error
	// Get returns the entry of id (false: none). A running entry whose
	// replica's lease has expired comes back, and stays, with State
	// ProcessLost.
	Get(ctx context.Context, id string) (ProcessEntry, bool, error)
	// List returns the entries of owner, as Get would.
	List(ctx context.Context, owner string) ([]ProcessEntry, error)
}

// ProcessLost is the state of a process whose replica stopped renewing
// its lease: it may have ended with the replica, or run on unreachable.
const ProcessLost = "lost"

// ProcessEntry is what a ProcessBoard keeps of one process.
type ProcessEntry struct {
	ID      string
	Owner   string // tool.Call.Caller of who started it
	Replica string // where it runs
	Name    string
	Command string
	State   string // "running", "exited" or ProcessLost
	Reason  string // why it ended
	// ExitCode is its exit status (-1: none), Signal the signal that
	// ended it ("" none).
	ExitCode int
	Signal   string
	Started  time.Time
	CPU      time.Duration
	TTY      bool
	// Total is how many bytes of output it wrote, Tail the last of them
	// (the bytes from Total-len(Tail) to Total).
	Total int64
	Tail  []byte
	// Withheld says why Name, Command and Tail are empty on a reader:
	// the board keeps them sealed, and this reader could not open them
	// ("" : they are there).
	Withheld string
}
