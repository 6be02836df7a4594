package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/store"
)

// common holds the flags that every command building an engine shares.
type common struct {
	roots     []string
	policy    string
	auditPath string
	results   bool     // open the idempotency store (see openIdempotency)
	domains   []string // domains http_request may reach
}

func (c *common) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&c.roots, "root", nil, "folder the file tools may use (repeatable; default: the current folder)")
	f.StringVar(&c.policy, "policy", "", "policy file (YAML): mode, max_level, deny/ask/allow rules")
	f.StringVar(&c.auditPath, "audit", defaultAuditPath(), "audit log file (JSON Lines, hash-chained); \"off\" disables it")
	f.StringArrayVar(&c.domains, "allow-domain", nil, "a domain http_request may reach (repeatable; \"*.example.com\" for subdomains); none by default")
}

// defaultAuditPath is $TOOLGATE_AUDIT, else audit.jsonl in the state folder.
func defaultAuditPath() string {
	if p := os.Getenv("TOOLGATE_AUDIT"); p != "" {
		return p
	}
	return filepath.Join(stateDir(), "audit.jsonl")
}

// stateDir is where toolgate keeps its state: $TOOLGATE_STATE, else
// toolgate in the XDG state folder ($XDG_STATE_HOME, or ~/.local/state).
func stateDir() string {
	if d := os.Getenv("TOOLGATE_STATE"); d != "" {
		return d
	}
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "toolgate")
}

// openIdempotency opens the embedded result store in the state folder.
func (s *setup) openIdempotency() (*store.Idempotency, error) {
	db, err := store.OpenBolt(filepath.Join(stateDir(), "idempotency.db"), store.BoltOptions{})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, db.Close)
	return store.NewIdempotency(db, 0), nil
}

// setup is what a command that runs tools needs.
type setup struct {
	registry *registry.Registry
	engine   *engine.Engine
	closers  []func() error
}

func (s *setup) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// build assembles the registry with the built-in tools, the policy, the
// audit log and (when c.results is set) the result store into an engine.
func (c *common) build(opts engine.Options) (*setup, error) {
	s := &setup{registry: registry.New()}
	sets, err := builtinTools(c)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, sets.Close)
	if err := s.registry.Register(sets.tools...); err != nil {
		s.Close()
		return nil, err
	}
	if c.policy != "" {
		p, err := policy.Load(c.policy)
		if err != nil {
			s.Close()
			return nil, usageErr("%v", err)
		}
		opts.Policy = p
	}
	if c.auditPath != "off" && c.auditPath != "" {
		log, err := audit.Open(c.auditPath, audit.Options{})
		if err != nil {
			s.Close()
			return nil, &exitError{exitTool, fmt.Errorf("opening the audit log: %w (use --audit FILE or --audit off)", err)}
		}
		s.closers = append(s.closers, log.Close)
		opts.Auditor = log
	}
	if c.results {
		idem, err := s.openIdempotency()
		if err != nil {
			s.Close()
			return nil, &exitError{exitTool, err}
		}
		opts.Idempotency = idem
	}
	if opts.Redactor == nil {
		red, err := policy.NewRedactor(policy.DefaultSecrets())
		if err != nil {
			s.Close()
			return nil, err
		}
		opts.Redactor = red
	}
	if opts.Spill.Dir == "" {
		// Results over the budget are kept where read_file can reach them.
		opts.Spill = engine.Spill{Dir: filepath.Join(sets.roots.Dirs()[0], ".toolgate", "spill"), ShowAs: ".toolgate/spill"}
	}
	opts.Registry = s.registry
	s.engine = engine.New(opts)
	return s, nil
}
