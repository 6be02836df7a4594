package helm_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	psaapi "k8s.io/pod-security-admission/api"
	psa "k8s.io/pod-security-admission/policy"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/toolgate/toolgate/policy"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the chart")

// The chart's cases: testdata/values/NAME.yaml renders to
// testdata/golden/NAME.yaml. reduced is the chart's defaults with the one
// value it cannot default (who may call).
var cases = []struct {
	name, mode, backend string
}{
	{"reduced", "reduced", "local"},
	{"userns", "userns", "local"},
	{"gvisor", "gvisor", "local"},
	{"none", "none", "local"},
	{"kubernetes", "userns", "kubernetes"},
	{"proxy", "reduced", "local"},
}

// helmBin is the helm pinned in tools/go.mod, built once by go tool.
var helmBin = sync.OnceValues(func() (string, error) {
	modfile, err := filepath.Abs(filepath.Join("..", "..", "tools", "go.mod"))
	if err != nil {
		return "", err
	}
	// The first run builds it into the build cache; -n then names it.
	if out, err := exec.Command("go", "tool", "-modfile="+modfile, "helm", "version").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go tool -modfile=%s helm version: %v: %s", modfile, err, out)
	}
	out, err := exec.Command("go", "tool", "-modfile="+modfile, "-n", "helm").Output()
	return strings.TrimSpace(string(out)), err
})

// helm runs the pinned helm with its own empty homes.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	bin, err := helmBin()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

func render(t *testing.T, values string) []byte {
	t.Helper()
	out, err := helm(t, "template", "toolgate", "toolgate", "--namespace", "tools", "-f", values)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kinds are the types every rendered manifest must decode into.
var kinds = map[string]func() any{
	"v1/ConfigMap":      func() any { return &corev1.ConfigMap{} },
	"v1/Namespace":      func() any { return &corev1.Namespace{} },
	"v1/PodTemplate":    func() any { return &corev1.PodTemplate{} },
	"v1/Service":        func() any { return &corev1.Service{} },
	"v1/ServiceAccount": func() any { return &corev1.ServiceAccount{} },
	"apps/v1/Deployment": func() any {
		return &appsv1.Deployment{}
	},
	"rbac.authorization.k8s.io/v1/Role":        func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding": func() any { return &rbacv1.RoleBinding{} },
	"networking.k8s.io/v1/NetworkPolicy":       func() any { return &networkingv1.NetworkPolicy{} },
	"monitoring.coreos.com/v1/ServiceMonitor":  func() any { return &monitoringv1.ServiceMonitor{} },
}

// decode splits a render into its manifests and decodes each strictly:
// an unknown or duplicate field, a field in the wrong case or an unknown
// kind fails.
func decode(t *testing.T, out []byte) []any {
	t.Helper()
	var objs []any
	for _, d := range strings.Split(string(out), "\n---\n") {
		js, err := yaml.YAMLToJSONStrict([]byte(d))
		if err != nil {
			t.Fatalf("%v in\n%s", err, d)
		}
		if string(js) == "null" {
			continue
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(js, &tm); err != nil {
			t.Fatal(err)
		}
		mk, ok := kinds[tm.APIVersion+"/"+tm.Kind]
		if !ok {
			t.Fatalf("a manifest of kind %s/%s, which the test does not know:\n%s", tm.APIVersion, tm.Kind, d)
		}
		obj := mk()
		strict, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
		if err != nil || len(strict) > 0 {
			t.Fatalf("%s/%s: %v %v in\n%s", tm.APIVersion, tm.Kind, err, strict, d)
		}
		objs = append(objs, obj)
	}
	return objs
}

func only[T any](t *testing.T, objs []any) []T {
	var out []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func one[T any](t *testing.T, objs []any) T {
	t.Helper()
	l := only[T](t, objs)
	if len(l) != 1 {
		var zero T
		t.Fatalf("%d manifests of %T, want 1", len(l), zero)
	}
	return l[0]
}

// TestChartRenders: each case renders as its golden file, every manifest
// decodes strictly into its Kubernetes type, and the policy the chart
// writes is one toolgate loads, with the sandbox block its mode asks for.
func TestChartRenders(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			values := filepath.Join("testdata", "values", c.name+".yaml")
			out := render(t, values)
			golden := filepath.Join("testdata", "golden", c.name+".yaml")
			if *update {
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("the render of %s differs from %s (go test ./deploy/helm -run TestChartRenders -update rewrites it; read the diff before committing):\n%s", values, golden, firstDiff(want, out))
			}
			objs := decode(t, out)
			dep := one[*appsv1.Deployment](t, objs)
			ctr := dep.Spec.Template.Spec.Containers[0]
			if p := ctr.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
				t.Errorf("readiness probe %+v, want GET /readyz", p)
			}
			if p := ctr.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
				t.Errorf("liveness probe %+v, want GET /healthz", p)
			}
			for _, e := range ctr.Env {
				if e.Value != "" && (strings.Contains(e.Name, "SECRET") || strings.Contains(e.Name, "TOKEN") || strings.Contains(e.Name, "PASSWORD")) {
					t.Errorf("env %s has a value in the manifest: a secret must come by reference", e.Name)
				}
			}
			wantImage := "toolgate/toolgate-runner:"
			if c.name == "proxy" {
				wantImage = "toolgate/toolgate:"
			}
			if !strings.HasPrefix(ctr.Image, wantImage) {
				t.Errorf("image %s, want %s…", ctr.Image, wantImage)
			}
			hasRoot := slices.Contains(ctr.Args, "--root")
			if want := c.backend == "local" && c.name != "proxy"; hasRoot != want {
				t.Errorf("args %v: --root %v, want %v (a kubernetes backend's serve takes none)", ctr.Args, hasRoot, want)
			}
			for _, cm := range only[*corev1.ConfigMap](t, objs) {
				text, ok := cm.Data["toolgate.yaml"]
				if !ok {
					continue
				}
				p, err := policy.Parse([]byte(text))
				if err != nil {
					t.Fatalf("the chart's policy does not load: %v\n%s", err, text)
				}
				switch {
				case c.mode == "none" && !p.Sandbox.CommandsOff():
					t.Errorf("mode none: the policy offers command tools:\n%s", text)
				case c.mode == "userns" && (p.Sandbox.RequiredLevel() != "full" || p.Sandbox.CommandsOff()):
					t.Errorf("mode userns: want require full:\n%s", text)
				case (c.mode == "gvisor" || c.mode == "reduced") && (p.Sandbox.RequiredLevel() != "reduced" || p.Sandbox.CommandsOff()):
					t.Errorf("mode %s: want require reduced:\n%s", c.mode, text)
				}
			}
		})
	}
}

// firstDiff shows where two renders part.
func firstDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  golden: %s\n  render: %s", i+1, a, b)
		}
	}
	return ""
}

// TestChartPodSecurity checks every pod the chart renders with Pod
// Security admission's own evaluator: the default pod, and every pod of
// the modes but userns, passes "restricted"; a userns pod passes
// "baseline" (Kubernetes 1.35+, where an unmasked /proc is allowed in a
// user namespace) and fails "restricted" on procMount alone.
func TestChartPodSecurity(t *testing.T) {
	eval, err := psa.NewEvaluator(psa.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	failed := func(lv psaapi.LevelVersion, meta metav1.ObjectMeta, spec corev1.PodSpec) []string {
		var reasons []string
		for _, r := range eval.EvaluatePod(lv, &meta, &spec) {
			if !r.Allowed {
				reasons = append(reasons, r.ForbiddenReason+": "+r.ForbiddenDetail)
			}
		}
		return reasons
	}
	restricted := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	baseline := psaapi.LevelVersion{Level: psaapi.LevelBaseline, Version: psaapi.MajorMinorVersion(1, 35)}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs := decode(t, render(t, filepath.Join("testdata", "values", c.name+".yaml")))
			type pod struct {
				what     string
				meta     metav1.ObjectMeta
				spec     corev1.PodSpec
				commands bool // commands run in it
			}
			dep := one[*appsv1.Deployment](t, objs)
			pods := []pod{{"the gateway's pod", dep.Spec.Template.ObjectMeta, dep.Spec.Template.Spec,
				c.backend == "local" && c.mode != "none"}} // serve's commands, or proxy's boxed upstreams
			for _, pt := range only[*corev1.PodTemplate](t, objs) {
				pods = append(pods, pod{"the runner pods", pt.Template.ObjectMeta, pt.Template.Spec, true})
			}
			if c.backend == "kubernetes" && len(pods) != 2 {
				t.Fatalf("backend kubernetes rendered %d PodTemplates, want 1", len(pods)-1)
			}
			for _, p := range pods {
				if !(p.commands && c.mode == "userns") {
					if r := failed(restricted, p.meta, p.spec); len(r) > 0 {
						t.Errorf("%s fails Pod Security restricted: %v", p.what, r)
					}
					if p.spec.HostUsers != nil || p.spec.RuntimeClassName != nil && c.mode != "gvisor" {
						t.Errorf("%s: hostUsers %v, runtimeClassName %v outside their modes", p.what, p.spec.HostUsers, p.spec.RuntimeClassName)
					}
					if c.mode == "gvisor" && p.commands && (p.spec.RuntimeClassName == nil || *p.spec.RuntimeClassName != "gvisor") {
						t.Errorf("%s: mode gvisor without runtimeClassName gvisor", p.what)
					}
					continue
				}
				if r := failed(baseline, p.meta, p.spec); len(r) > 0 {
					t.Errorf("%s (userns) fails Pod Security baseline 1.35: %v", p.what, r)
				}
				r := failed(restricted, p.meta, p.spec)
				if len(r) != 1 || !strings.HasPrefix(r[0], "procMount:") {
					t.Errorf("%s (userns) fails restricted on %v, want procMount alone", p.what, r)
				}
				sc, csc := p.spec.SecurityContext, p.spec.Containers[0].SecurityContext
				if p.spec.HostUsers == nil || *p.spec.HostUsers || csc.ProcMount == nil || *csc.ProcMount != corev1.UnmaskedProcMount {
					t.Errorf("%s (userns): hostUsers %v, procMount %v", p.what, p.spec.HostUsers, csc.ProcMount)
				}
				if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeLocalhost || *sc.SeccompProfile.LocalhostProfile != "profiles/toolgate-userns.json" {
					t.Errorf("%s (userns): seccomp %+v, want Localhost profiles/toolgate-userns.json", p.what, sc.SeccompProfile)
				}
				if a := csc.AppArmorProfile; a == nil || a.Type != corev1.AppArmorProfileTypeLocalhost || *a.LocalhostProfile != "toolgate-userns" {
					t.Errorf("%s (userns): AppArmor %+v, want Localhost toolgate-userns", p.what, a)
				}
			}
		})
	}
}

// TestChartSandboxAccess: with backend kubernetes the gateway may do
// exactly create, get, list, watch and delete on pods in the sandbox
// namespace (and read its one template), or the same on agent-sandbox's
// claims, and only the gateway's pods reach
// a runner, on the runner's port.
func TestChartSandboxAccess(t *testing.T) {
	objs := decode(t, render(t, filepath.Join("testdata", "values", "kubernetes.yaml")))
	dep := one[*appsv1.Deployment](t, objs)
	pt := one[*corev1.PodTemplate](t, objs)
	role := one[*rbacv1.Role](t, objs)
	rb := one[*rbacv1.RoleBinding](t, objs)
	np := one[*networkingv1.NetworkPolicy](t, objs)
	const ns = "toolgate-sandboxes"
	for _, m := range []metav1.ObjectMeta{pt.ObjectMeta, role.ObjectMeta, rb.ObjectMeta, np.ObjectMeta} {
		if m.Namespace != ns {
			t.Errorf("%s in namespace %q, want %s", m.Name, m.Namespace, ns)
		}
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"podtemplates"}, ResourceNames: []string{pt.Name}, Verbs: []string{"get"}},
	}
	if !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("rules %+v, want %+v", role.Rules, want)
	}
	sa := dep.Spec.Template.Spec.ServiceAccountName
	if rb.RoleRef.Name != role.Name || rb.RoleRef.Kind != "Role" || len(rb.Subjects) != 1 ||
		rb.Subjects[0].Kind != "ServiceAccount" || rb.Subjects[0].Name != sa || rb.Subjects[0].Namespace != "tools" {
		t.Errorf("role binding %+v does not bind %s to the gateway's account tools/%s", rb, role.Name, sa)
	}
	// With agent-sandbox the gateway claims sandboxes instead: no pods
	// permission, no PodTemplate (the SandboxTemplate is the operator's).
	out, err := helm(t, "template", "toolgate", "toolgate", "--namespace", "tools", "-f", filepath.Join("testdata", "values", "kubernetes.yaml"),
		"--set", "sandbox.kubernetes.claims=true", "--set", "sandbox.kubernetes.template=runners")
	if err != nil {
		t.Fatal(err)
	}
	claims := decode(t, out)
	wantClaims := []rbacv1.PolicyRule{
		{APIGroups: []string{"extensions.agents.x-k8s.io"}, Resources: []string{"sandboxclaims"}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{"extensions.agents.x-k8s.io"}, Resources: []string{"sandboxtemplates"}, ResourceNames: []string{"runners"}, Verbs: []string{"get"}},
		{APIGroups: []string{"extensions.agents.x-k8s.io"}, Resources: []string{"sandboxwarmpools"}, Verbs: []string{"list"}},
	}
	if r := one[*rbacv1.Role](t, claims); !reflect.DeepEqual(r.Rules, wantClaims) {
		t.Errorf("claims: rules %+v, want %+v", r.Rules, wantClaims)
	}
	if n := len(only[*corev1.PodTemplate](t, claims)); n != 0 {
		t.Errorf("claims: %d PodTemplates rendered", n)
	}
	// The policy selects the runner pods, and admits the gateway's alone.
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() {
		t.Fatalf("runner selector %v %v", sel, err)
	}
	if !matches(sel, pt.Template.Labels) || matches(sel, dep.Spec.Template.Labels) {
		t.Errorf("the NetworkPolicy's selector %s: runners %v, gateway %v", sel, pt.Template.Labels, dep.Spec.Template.Labels)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) || len(np.Spec.Ingress) != 1 {
		t.Fatalf("network policy %+v", np.Spec)
	}
	// Out of a runner: DNS alone (commands at the reduced level share the
	// pod's network: no metadata address, API server, Redis or gateway).
	if len(np.Spec.Egress) != 1 || len(np.Spec.Egress[0].To) != 1 || np.Spec.Egress[0].To[0].IPBlock != nil {
		t.Fatalf("egress %+v: want DNS alone", np.Spec.Egress)
	}
	for _, p := range np.Spec.Egress[0].Ports {
		if p.Port == nil || p.Port.IntValue() != 53 {
			t.Errorf("egress port %+v: want 53 alone", p)
		}
	}
	in := np.Spec.Ingress[0]
	if len(in.From) != 1 || in.From[0].PodSelector == nil || in.From[0].NamespaceSelector == nil || in.From[0].IPBlock != nil {
		t.Fatalf("ingress from %+v: want the gateway's pods in the gateway's namespace alone", in.From)
	}
	from, _ := metav1.LabelSelectorAsSelector(in.From[0].PodSelector)
	fromNS, _ := metav1.LabelSelectorAsSelector(in.From[0].NamespaceSelector)
	if !matches(from, dep.Spec.Template.Labels) || matches(from, pt.Template.Labels) ||
		!matches(fromNS, map[string]string{"kubernetes.io/metadata.name": "tools"}) || matches(fromNS, map[string]string{"kubernetes.io/metadata.name": ns}) {
		t.Errorf("ingress from pods %s in namespaces %s", from, fromNS)
	}
	runner := pt.Template.Spec.Containers[0]
	if len(in.Ports) != 1 || in.Ports[0].Port == nil || in.Ports[0].Port.IntValue() != int(runner.Ports[0].ContainerPort) {
		t.Errorf("ingress ports %+v, runner port %d", in.Ports, runner.Ports[0].ContainerPort)
	}
	// The runner gets its secret by reference, and no API token.
	if !strings.HasPrefix(runner.Image, "toolgate/toolgate-runner:") || runner.Args[0] != "runner" ||
		!strings.Contains(strings.Join(runner.Args, " "), "--require full") {
		t.Errorf("runner %s %v, want toolgate runner requiring the full sandbox userns gives", runner.Image, runner.Args)
	}
	var secret *corev1.EnvVar
	for i, e := range runner.Env {
		if e.Name == "TOOLGATE_RUNNER_SECRET" {
			secret = &runner.Env[i]
		}
	}
	if secret == nil || secret.Value != "" || secret.ValueFrom == nil || secret.ValueFrom.SecretKeyRef == nil {
		t.Errorf("the runner's secret %+v: want a secretKeyRef", secret)
	}
	if a := pt.Template.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("runner pods mount an API token")
	}
	if a := dep.Spec.Template.Spec.AutomountServiceAccountToken; a == nil || !*a {
		t.Error("the gateway of backend kubernetes has no API token to make pods with")
	}
}

func matches(sel labels.Selector, l map[string]string) bool {
	return sel.Matches(labels.Set(l))
}

// TestChartRefusesBadValues: values that cannot work fail the render,
// saying what to set: values.schema.json refuses unknown keys and values
// out of their sets, the templates what no schema says.
func TestChartRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		set  []string
		want string
	}{
		{nil, "no auth"},
		{[]string{"allowRemote=true", "sandbox.mode=privileged"}, "at '/sandbox/mode': value must be one of"},
		{[]string{"allowRemote=true", "sandbox.mod=userns"}, "additional properties 'mod' not allowed"},
		{[]string{"allowRemote=true", "command=run"}, "at '/command'"},
		{[]string{"allowRemote=true", "command=proxy"}, "proxy.config"},
		{[]string{"allowRemote=true", "sandbox.backend=kubernetes", "sandbox.mode=none"}, "runner pods exist to run commands"},
		{[]string{"allowRemote=true", "sandbox.backend=docker"}, "at '/sandbox/backend'"},
		{[]string{"allowRemote=true", "image.digest=latest"}, "at '/image/digest'"},
	} {
		args := []string{"template", "toolgate", "toolgate", "--namespace", "tools"}
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		out, err := helm(t, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %v: err %v, want one naming %q (rendered %d bytes)", c.set, err, c.want, len(out))
		}
	}
}

// TestChartLint: helm lint --strict passes for every case.
func TestChartLint(t *testing.T) {
	for _, c := range cases {
		if out, err := helm(t, "lint", "--strict", "toolgate", "-f", filepath.Join("testdata", "values", c.name+".yaml")); err != nil {
			t.Errorf("%s: %v\n%s", c.name, err, out)
		}
	}
}

// TestSeccompProfile: the userns profile is the runtime default's shape
// (deny by default) with the namespace calls allowed.
func TestSeccompProfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("toolgate", "files", "seccomp", "toolgate-userns.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		DefaultAction string
		Syscalls      []struct {
			Names  []string
			Action string
			Args   []json.RawMessage
		}
	}
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" {
		t.Errorf("defaultAction %s: a profile must deny what it does not name", p.DefaultAction)
	}
	allowed := map[string]bool{}
	for _, s := range p.Syscalls {
		if s.Action == "SCMP_ACT_ALLOW" && len(s.Args) == 0 {
			for _, n := range s.Names {
				allowed[n] = true
			}
		}
	}
	for _, n := range []string{"unshare", "clone", "clone3", "mount", "umount2", "pivot_root", "sethostname",
		"landlock_create_ruleset", "landlock_restrict_self", "seccomp", "prctl", "execve", "read", "write"} {
		if !allowed[n] {
			t.Errorf("%s is not allowed", n)
		}
	}
	for _, n := range []string{"bpf", "init_module", "kexec_load", "reboot", "open_by_handle_at", "perf_event_open", "keyctl", "add_key", "chroot", "acct", "swapon"} {
		if allowed[n] {
			t.Errorf("%s is allowed: the runtime default refuses it", n)
		}
	}
}

// TestDeployDocValues: the values docs/deploy.md gives a team render, every
// manifest decodes strictly, and the policy the chart writes from them
// loads, with the doc's Redis, approvals and auth in it.
func TestDeployDocValues(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(# team.yaml.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/deploy.md shows no chart values (a yaml block starting with # team.yaml)")
	}
	values := filepath.Join(t.TempDir(), "team.yaml")
	if err := os.WriteFile(values, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	objs := decode(t, render(t, values))
	cm := one[*corev1.ConfigMap](t, objs)
	p, err := policy.Parse([]byte(cm.Data["toolgate.yaml"]))
	if err != nil {
		t.Fatalf("the policy of docs/deploy.md's values does not load: %v\n%s", err, cm.Data["toolgate.yaml"])
	}
	if p.State.Redis == nil || p.State.Redis.PasswordEnv != "TOOLGATE_REDIS_PASSWORD" || !p.HTTP.Stateless || p.Auth == nil {
		t.Errorf("policy from docs/deploy.md's values:\n%s", cm.Data["toolgate.yaml"])
	}
	if n := *one[*appsv1.Deployment](t, objs).Spec.Replicas; n != 3 {
		t.Errorf("%d replicas, want the doc's 3", n)
	}
}
