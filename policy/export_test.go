package policy

import "os"

// WorkspaceConfigPathsForTest is what NestedConfigPaths finds in the
// package folders the project at r declares, alone (workspace.declared).
func WorkspaceConfigPathsForTest(r *os.Root) ([]ConfigPath, error) {
	w := &workspace{root: r, seen: map[string]bool{}}
	if err := w.declared(); err != nil {
		return nil, err
	}
	return w.out, nil
}
