package policy_test

import (
	"path"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policy"
)

// ciSample is a path the entry's pattern matches ("*" made a name).
func ciSample(c policy.CIPath) string { return strings.ReplaceAll(c.Pattern, "*", "release") }

// TestCIPaths checks the list itself and, for every entry, that the default
// policy asks before write_file, edit_file (apply_patch's paths), move_file
// and delete_file change it, below it, in a nested project, in any letter
// case and through ".." and "./" spellings, with the entry's reason; that
// an allow rule naming the path (and only such a rule) lets the change
// through; that accept-edits mode still asks and default_deny: false does
// not; that reading and commands are not asked for being CI; and that a
// neighbour name is not caught.
func TestCIPaths(t *testing.T) {
	p := policy.Default()
	seen := map[string]bool{}
	for _, c := range policy.CIPaths() {
		t.Run(c.Pattern, func(t *testing.T) {
			low := strings.ToLower(c.Pattern)
			if seen[low] {
				t.Fatal("listed twice")
			}
			seen[low] = true
			if c.Pattern == "" || strings.ContainsAny(c.Pattern, `?[]{}\`) || path.Clean(c.Pattern) != c.Pattern || strings.HasPrefix(c.Pattern, "/") || strings.HasPrefix(c.Pattern, "..") {
				t.Fatal("not a relative path of names and *")
			}
			if c.System == "" || c.Source == "" {
				t.Fatal("no system or source")
			}
			name := ciSample(c)
			asked := func(d policy.Decision) bool { return d.Effect == policy.Ask && d.Rule == "ask:"+c.Rule() }
			for _, target := range []string{
				name, name + "/ci.yml", name + "/a/b/c.yml", "pkg/sub/" + name, "pkg/" + name + "/x",
				"./" + name, "x/../" + name, strings.ToUpper(name), "/srv/../" + name,
			} {
				if d := p.Decide(defWrite, pcall(defWrite, map[string]any{"path": target, "content": "x"})); !asked(d) {
					t.Errorf("writing %s: %s (%s)", target, d.Effect, d.Rule)
				}
				if d := p.Decide(defDel, pcall(defDel, map[string]any{"path": target})); !asked(d) {
					t.Errorf("deleting %s: %s (%s)", target, d.Effect, d.Rule)
				}
				if d := p.Decide(defMove, pcall(defMove, map[string]any{"source": "notes.txt", "destination": target})); !asked(d) {
					t.Errorf("moving onto %s: %s (%s)", target, d.Effect, d.Rule)
				}
				if d := p.Decide(defMove, pcall(defMove, map[string]any{"source": target, "destination": "old.txt"})); !asked(d) {
					t.Errorf("moving %s away: %s (%s)", target, d.Effect, d.Rule)
				}
				if d := p.Decide(defPatch, pcall(defPatch, map[string]any{"patch": "*** Begin Patch\n*** Add File: " + target + "\n+x\n*** End Patch\n"})); !asked(d) {
					t.Errorf("patching %s: %s (%s)", target, d.Effect, d.Rule)
				}
			}
			d := p.Decide(defWrite, pcall(defWrite, map[string]any{"path": name, "content": "x"}))
			if !strings.Contains(d.Reason, c.System) || !strings.Contains(d.Reason, c.AllowRule()) || d.Confirm {
				t.Errorf("the reason %q does not name %s and the rule that allows it (confirm %v)", d.Reason, c.System, d.Confirm)
			}
			if d := p.Decide(defRead, pcall(defRead, map[string]any{"path": name})); d.Effect != policy.Allow {
				t.Errorf("reading: %s (%s)", d.Effect, d.Rule)
			}
			if d := p.Decide(defCmd, pcall(defCmd, map[string]any{"command": "echo x >> '" + name + "'"})); d.Rule == "ask:"+c.Rule() {
				t.Errorf("a command is asked by the CI rule (the sandbox keeps the path read-only instead)")
			}
			dir, base := path.Split(name)
			_, last := path.Split(c.Pattern)
			var near []string
			if !strings.HasPrefix(last, "*") {
				near = append(near, dir+"x"+base, dir+"src/x"+base)
			}
			if !strings.HasSuffix(last, "*") {
				near = append(near, dir+base+"x", dir+"src/"+base+"x")
			}
			for _, near := range near {
				if d := p.Decide(defWrite, pcall(defWrite, map[string]any{"path": near, "content": "x"})); d.Effect != policy.Allow {
					t.Errorf("the neighbour %s: %s (%s)", near, d.Effect, d.Rule)
				}
			}

			// An allow rule naming the path lets the change through; one
			// that names the tool alone does not.
			for _, allow := range []string{c.AllowRule(), "Edit(/" + name + ")", "write_file(**/" + name + ")", "Edit(**)"} {
				q, err := policy.Parse([]byte("allow:\n  - " + quoteYAML(allow) + "\n"))
				if err != nil {
					t.Fatal(err)
				}
				if d := q.Decide(defWrite, pcall(defWrite, map[string]any{"path": name + "/x", "content": "x"})); d.Effect != policy.Allow {
					t.Errorf("allow %s: writing %s/x: %s (%s)", allow, name, d.Effect, d.Rule)
				}
			}
			for _, allow := range []string{"write_file", "Edit", "Edit(src/**)"} {
				q, err := policy.Parse([]byte("allow:\n  - " + quoteYAML(allow) + "\n"))
				if err != nil {
					t.Fatal(err)
				}
				if d := q.Decide(defWrite, pcall(defWrite, map[string]any{"path": name, "content": "x"})); !asked(d) {
					t.Errorf("allow %s: %s (%s)", allow, d.Effect, d.Rule)
				}
			}
			// Allow rules compare letter case exactly: the upper-case name is still asked about.
			q, _ := policy.Parse([]byte("allow:\n  - " + quoteYAML(c.AllowRule()) + "\n"))
			if d := q.Decide(defWrite, pcall(defWrite, map[string]any{"path": strings.ToUpper(name), "content": "x"})); !asked(d) && strings.ToUpper(name) != name {
				t.Errorf("allow %s: writing %s: %s (%s)", c.AllowRule(), strings.ToUpper(name), d.Effect, d.Rule)
			}
			// A move needs each CI path it touches named.
			q, _ = policy.Parse([]byte("allow:\n  - " + quoteYAML(c.AllowRule()) + "\n"))
			if d := q.Decide(defMove, pcall(defMove, map[string]any{"source": name, "destination": "pkg/" + name})); !asked(d) {
				t.Errorf("a move from an allowed to a nested CI path: %s (%s)", d.Effect, d.Rule)
			}

			q, _ = policy.Parse([]byte("mode: accept-edits\n"))
			if d := q.Decide(defWrite, pcall(defWrite, map[string]any{"path": name, "content": "x"})); !asked(d) {
				t.Errorf("accept-edits: %s (%s)", d.Effect, d.Rule)
			}
			q, _ = policy.Parse([]byte("default_deny: false\n"))
			if d := q.Decide(defWrite, pcall(defWrite, map[string]any{"path": name, "content": "x"})); d.Effect != policy.Allow {
				t.Errorf("default_deny: false: %s (%s)", d.Effect, d.Rule)
			}
		})
	}
	for _, must := range []string{".github/workflows", ".github/actions", ".gitlab-ci.yml", ".gitlab/ci", ".circleci", "Jenkinsfile", "azure-pipelines.yml", ".azure-pipelines",
		"bitbucket-pipelines.yml", ".buildkite", ".drone.yml", ".travis.yml", ".woodpecker.yml", ".woodpecker", ".cirrus.yml", "appveyor.yml", "codefresh.yml",
		".semaphore", ".tekton", "cloudbuild.yaml", "buildspec.yml", ".harness", "bitrise.yml", ".forgejo/workflows", ".gitea/workflows"} {
		if !seen[strings.ToLower(must)] {
			t.Errorf("%s is not a CI path", must)
		}
	}
}

// TestCIPathsOnOtherLists: the copilot setup workflow stays refused (a
// ConfigPath) inside the asked .github/workflows; a user's deny rule still
// wins over the question; bypass mode does not ask.
func TestCIPathsOnOtherLists(t *testing.T) {
	p := policy.Default()
	if d := p.Decide(defWrite, pcall(defWrite, map[string]any{"path": ".github/workflows/copilot-setup-steps.yml", "content": "x"})); d.Effect != policy.Deny {
		t.Errorf("copilot-setup-steps.yml: %s (%s)", d.Effect, d.Rule)
	}
	q, _ := policy.Parse([]byte("deny:\n  - Edit(.gitlab-ci.yml)\n"))
	if d := q.Decide(defWrite, pcall(defWrite, map[string]any{"path": ".gitlab-ci.yml", "content": "x"})); d.Effect != policy.Deny {
		t.Errorf("a deny rule: %s (%s)", d.Effect, d.Rule)
	}
	q, _ = policy.Parse([]byte("mode: bypass\n"))
	if d := q.Decide(defWrite, pcall(defWrite, map[string]any{"path": ".gitlab-ci.yml", "content": "x"})); d.Effect != policy.Allow {
		t.Errorf("bypass: %s (%s)", d.Effect, d.Rule)
	}
}

func quoteYAML(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
