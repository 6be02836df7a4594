package policy

// CIPath is a file or folder that a CI system reads from a repository and
// runs, with the repository's secrets, on the next push: the classic way a
// prompt-injected agent reaches production. Changing CI is also ordinary
// work, so these are not refused like the ConfigPaths: the policy asks
// before a tool changes one (--yes, or an allow rule whose path pattern
// names the path, covers the question), and the command sandbox keeps the
// ones at the top of its workspace read-only unless an allow rule names
// them (a command cannot ask while it runs).
type CIPath struct {
	// Pattern is the path from the top of a project, slash-separated: plain
	// names, or a "*" standing for any part of one name ("*.jenkinsfile").
	// It is matched at any depth (a root may be a folder of a repository,
	// or hold several) and in any letter case (a case-insensitive file
	// system must not let ".GitHub/workflows" through); a pattern that
	// matches a folder also matches everything in it.
	Pattern string
	// System is the CI system that runs it ("GitHub Actions").
	System string
	// Source is where the system documents the name.
	Source string
}

// CIPaths returns the CI definitions (see CIPath), each with the system
// that runs it and where that system documents the name.
func CIPaths() []CIPath {
	var out []CIPath
	add := func(system, source string, patterns ...string) {
		for _, p := range patterns {
			out = append(out, CIPath{Pattern: p, System: system, Source: source})
		}
	}
	// Workflows, and the actions a workflow runs by path (uses: ./x runs
	// x/action.yml, conventionally under .github/actions; action.yml at any
	// depth is GitHub's name for an action's definition). The copilot setup
	// workflow is a ConfigPath as well: refused, not asked.
	add("GitHub Actions", "docs.github.com: Workflow syntax for GitHub Actions (.github/workflows); Metadata syntax for GitHub Actions (action.yml or action.yaml)",
		".github/workflows", ".github/actions", "action.yml", "action.yaml")
	// Forgejo and Gitea run their own folders' workflows (and .github's).
	add("Forgejo Actions", "forgejo.org docs: Forgejo Actions user guide (.forgejo/workflows)", ".forgejo/workflows")
	add("Gitea Actions", "docs.gitea.com: Gitea Actions quick start (.gitea/workflows)", ".gitea/workflows")
	// The default CI/CD configuration file, and the folder GitLab's own
	// projects keep their include: local files in.
	add("GitLab CI/CD", "docs.gitlab.com: CI/CD configuration file (.gitlab-ci.yml); include:local (the .gitlab/ci/ convention)",
		".gitlab-ci.yml", ".gitlab-ci.yaml", ".gitlab/ci")
	add("CircleCI", "circleci.com docs: Configuration reference (.circleci/config.yml, dynamic configuration's continuation files)", ".circleci")
	// The default script path of a Pipeline from SCM and of multibranch
	// projects is Jenkinsfile (any folder can be set); Jenkinsfile.NAME and
	// NAME.Jenkinsfile are the usual names of a project's other pipelines.
	// A folder named jenkins is not listed: Jenkins' own plugins keep their
	// Java code under io/jenkins/ and org/jenkins/.
	add("Jenkins", "jenkins.io: Using a Jenkinsfile (Script Path, default Jenkinsfile)", "Jenkinsfile", "Jenkinsfile.*", "*.Jenkinsfile")
	add("Azure Pipelines", "learn.microsoft.com: Azure Pipelines YAML schema (azure-pipelines.yml; templates kept in .azure-pipelines)",
		"azure-pipelines.yml", "azure-pipelines.yaml", ".azure-pipelines")
	add("Bitbucket Pipelines", "support.atlassian.com: bitbucket-pipelines.yml", "bitbucket-pipelines.yml")
	// The files buildkite-agent pipeline upload reads when given none, and
	// .buildkite/hooks, which the agent runs itself.
	add("Buildkite", "buildkite.com docs: buildkite-agent pipeline upload (its default files); repository hooks in .buildkite/hooks",
		".buildkite", "buildkite.yml", "buildkite.yaml", "buildkite.json", "buildkite/pipeline.yml", "buildkite/pipeline.yaml", "buildkite/pipeline.json")
	add("Drone", "docs.drone.io: pipeline configuration (.drone.yml; the Jsonnet and Starlark extensions)", ".drone.yml", ".drone.yaml", ".drone.jsonnet", ".drone.star")
	add("Travis CI", "docs.travis-ci.com: customizing the build (.travis.yml)", ".travis.yml")
	add("Woodpecker CI", "woodpecker-ci.org docs: workflows (.woodpecker.yml, .woodpecker.yaml, .woodpecker/)", ".woodpecker.yml", ".woodpecker.yaml", ".woodpecker")
	add("Cirrus CI", "cirrus-ci.org: writing tasks (.cirrus.yml, .cirrus.star)", ".cirrus.yml", ".cirrus.star")
	add("AppVeyor", "appveyor.com docs: appveyor.yml reference (appveyor.yml or .appveyor.yml)", "appveyor.yml", ".appveyor.yml")
	add("Codefresh", "codefresh.io docs: pipeline definitions (codefresh.yml)", "codefresh.yml", "codefresh.yaml")
	add("Semaphore", "docs.semaphoreci.com: pipeline YAML (.semaphore/semaphore.yml)", ".semaphore")
	add("Tekton (Pipelines as Code)", "pipelinesascode.com: authoring PipelineRuns in .tekton/", ".tekton")
	add("Google Cloud Build", "cloud.google.com: build configuration file schema (cloudbuild.yaml or cloudbuild.json)", "cloudbuild.yaml", "cloudbuild.yml", "cloudbuild.json")
	add("AWS CodeBuild", "docs.aws.amazon.com: build specification reference (buildspec.yml in the source root)", "buildspec.yml", "buildspec.yaml")
	add("Harness", "developer.harness.io: Git Experience, pipelines stored in .harness/", ".harness")
	add("Bitrise", "devcenter.bitrise.io: bitrise.yml", "bitrise.yml", "bitrise.yaml")
	add("sourcehut builds", "man.sr.ht: builds.sr.ht, git.sr.ht integration (.build.yml, .builds/*.yml)", ".build.yml", ".builds")
	add("TeamCity", "jetbrains.com/help/teamcity: storing project settings in version control (.teamcity/settings.kts)", ".teamcity")
	add("Zuul", "zuul-ci.org docs: project configuration (zuul.yaml, .zuul.yaml, zuul.d/, .zuul.d/)", "zuul.yaml", ".zuul.yaml", "zuul.d", ".zuul.d")
	add("Bamboo", "confluence.atlassian.com: Bamboo Specs stored in the repository (bamboo-specs/)", "bamboo-specs")
	add("Codemagic", "docs.codemagic.io: codemagic.yaml", "codemagic.yaml")
	add("OneDev", "docs.onedev.io: build spec (.onedev-buildspec.yml)", ".onedev-buildspec.yml")
	add("Jenkins X", "jenkins-x.io: pipelines in .lighthouse/ (Lighthouse triggers)", ".lighthouse")
	return out
}

// ciReason is the sentence a CI path's question carries.
func (c CIPath) reason() string {
	return "a CI definition of " + c.System + ": it runs on the next push with the repository's secrets; " +
		"an allow rule naming the path (" + c.AllowRule() + " at the top of the workspace) lets tools change it without asking"
}

// Rule is the policy rule that names the entry for a change:
// "Edit(**/.github/workflows)".
func (c CIPath) Rule() string { return "Edit(**/" + c.Pattern + ")" }

// AllowRule is the allow rule that lets tools change the entry at the top
// of the roots without asking, and commands write it: "Edit(/.github/workflows)".
func (c CIPath) AllowRule() string { return "Edit(/" + c.Pattern + ")" }

// DefaultGuarded returns the rules every policy starts with in Guarded
// (unless its file says default_deny: false): one per CIPaths entry.
func DefaultGuarded() []string {
	var out []string
	for _, c := range CIPaths() {
		out = append(out, c.Rule())
	}
	return out
}

// ciReasons adds the reason of each CI rule to reasons.
func ciReasons(reasons map[string]string) {
	for _, c := range CIPaths() {
		reasons[c.Rule()] = c.reason()
	}
}

// AllowsChange reports whether the policy's own allow rules (not a
// role's) name the path rel for a change — an Edit (or Write) rule whose
// path pattern matches it, compared exactly, rel read as the file tools
// read it (relative to the first root) — and no Edit deny rule catches it.
// The command sandbox lets commands write the CI definitions it allows
// (toolsets/exec Options.AllowCI).
func (p *Policy) AllowsChange(rel string) bool {
	c := p.prepare()
	if c.err != nil {
		return false
	}
	loc := c.roots.locate(rel)
	for _, r := range c.deny {
		if r.kind == specPath && r.accessOf()&accWrite != 0 && r.path.match(&loc, true) {
			return false
		}
	}
	for _, r := range c.allow {
		if r.alias == aliasEdit && r.kind == specPath && r.path.match(&loc, false) {
			return true
		}
	}
	return false
}
