package sandbox

import "context"

// DryRun runs nothing: it checks the spec and returns an Outcome with
// DryRun set and the command that would run.
type DryRun struct{}

// Name returns "dry-run".
func (DryRun) Name() string { return "dry-run" }

// Run returns what would run.
func (DryRun) Run(ctx context.Context, spec Spec) (Outcome, error) {
	p, err := prepare(spec)
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{
		Backend: "dry-run", DryRun: true, Command: p.argv,
		Launcher: []string{"cd " + p.dir},
		Protections: Protections{
			Landlock: "unavailable: nothing ran", Cgroup: "none: nothing ran", Network: spec.Network.Mode(),
		},
	}, nil
}
