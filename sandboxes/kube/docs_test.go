package kube

import (
	"context"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	agentv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/toolgate/toolgate/policy"
)

// deployObjects decodes, strictly, the manifests of docs/deploy.md's
// Kubernetes section (its yaml blocks that start with apiVersion), by
// "Kind/name"; and returns its policy (the block "# toolgate.yaml …").
func deployObjects(t *testing.T) (map[string]runtime.Object, *policy.Policy) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	section, ok := strings.CutPrefix(string(doc[strings.Index(string(doc), "\n## Kubernetes\n")+1:]), "## Kubernetes\n")
	if !ok {
		t.Fatal("docs/deploy.md has no Kubernetes section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	scheme := runtime.NewScheme()
	if err := clientscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := agentv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codec := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Yaml: true, Strict: true})
	objs := map[string]runtime.Object{}
	var pol *policy.Policy
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(section, -1) {
		if strings.HasPrefix(m[1], "# toolgate.yaml") {
			if pol, err = policy.Parse([]byte(m[1])); err != nil {
				t.Fatalf("the section's policy: %v", err)
			}
			continue
		}
		if !strings.HasPrefix(m[1], "apiVersion:") { // chart values, a container's excerpt
			continue
		}
		for _, y := range strings.Split(m[1], "\n---\n") {
			o, gvk, err := codec.Decode([]byte(y), nil, nil)
			if err != nil {
				t.Fatalf("decoding a manifest of docs/deploy.md: %v\n%s", err, y)
			}
			m, err := meta.Accessor(o)
			if err != nil {
				t.Fatal(err)
			}
			objs[gvk.Kind+"/"+m.GetName()] = o
		}
	}
	if pol == nil || pol.Sandbox.Backend != policy.BackendKubernetes {
		t.Fatalf("the Kubernetes section's policy does not use backend kubernetes: %+v", pol)
	}
	return objs, pol
}

// TestDeployManifests: what docs/deploy.md's Kubernetes section shows
// works as it says: its manifests decode strictly; the gateway has no
// --root and no emptyDir workspace; its Roles give exactly create, get,
// list, watch and delete on pods (or claims) and get on the one template;
// its NetworkPolicy admits only the gateway's pods on the runner port to
// the pods the backend makes, and lets them reach nothing; and its
// PodTemplate, and its SandboxTemplate and pool, make sandboxes whose real
// runners serve a write and a read.
func TestDeployManifests(t *testing.T) {
	objs, pol := deployObjects(t)
	get := func(key string) runtime.Object {
		o, ok := objs[key]
		if !ok {
			t.Fatalf("docs/deploy.md shows no %s (it shows %v)", key, slices.Sorted(maps.Keys(objs)))
		}
		return o
	}
	k := pol.Sandbox.Kubernetes
	tmpl := get("PodTemplate/" + k.Template).(*corev1.PodTemplate)
	if tmpl.Namespace != k.Namespace {
		t.Errorf("the PodTemplate is in %q, the policy's namespace is %q", tmpl.Namespace, k.Namespace)
	}

	gw := get("Deployment/toolgate").(*appsv1.Deployment)
	spec := gw.Spec.Template.Spec
	if slices.Contains(spec.Containers[0].Args, "--root") {
		t.Errorf("the gateway Deployment still passes --root: %v", spec.Containers[0].Args)
	}
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil {
			t.Errorf("the gateway Deployment still has an emptyDir volume %q", v.Name)
		}
	}
	secretByRef := false
	for _, e := range spec.Containers[0].Env {
		secretByRef = secretByRef || e.Name == pol.Sandbox.SecretEnv() && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
	}
	if !secretByRef {
		t.Errorf("the gateway does not get %s from a Secret", pol.Sandbox.SecretEnv())
	}

	verbs := []string{"create", "get", "list", "watch", "delete"}
	podRules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: verbs},
		{APIGroups: []string{""}, Resources: []string{"podtemplates"}, ResourceNames: []string{k.Template}, Verbs: []string{"get"}},
	}
	const ext = "extensions.agents.x-k8s.io"
	claimRules := []rbacv1.PolicyRule{
		{APIGroups: []string{ext}, Resources: []string{"sandboxclaims"}, Verbs: verbs},
		{APIGroups: []string{ext}, Resources: []string{"sandboxtemplates"}, ResourceNames: []string{k.Template}, Verbs: []string{"get"}},
		{APIGroups: []string{ext}, Resources: []string{"sandboxwarmpools"}, Verbs: []string{"list"}},
	}
	for name, want := range map[string][]rbacv1.PolicyRule{"toolgate-sandboxes": podRules, "toolgate-sandboxclaims": claimRules} {
		role := get("Role/" + name).(*rbacv1.Role)
		if role.Namespace != k.Namespace || !reflect.DeepEqual(role.Rules, want) {
			t.Errorf("Role %s/%s rules %+v; want exactly %+v in %s", role.Namespace, name, role.Rules, want, k.Namespace)
		}
	}
	rb := get("RoleBinding/toolgate-sandboxes").(*rbacv1.RoleBinding)
	if want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: spec.ServiceAccountName, Namespace: gw.Namespace}}; rb.Namespace != k.Namespace || !reflect.DeepEqual(rb.Subjects, want) {
		t.Errorf("RoleBinding subjects %+v in %s; want the gateway's ServiceAccount %+v", rb.Subjects, rb.Namespace, want)
	}
	get("ServiceAccount/" + spec.ServiceAccountName)

	np := get("NetworkPolicy/toolgate-runners").(*networkingv1.NetworkPolicy)
	// The labels of a pod the backend makes: the template's and its own.
	podLabels := labels.Merge(tmpl.Template.Labels, (&Backend{deployment: "toolgate"}).labels(context.Background()))
	if sel := labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels); np.Namespace != k.Namespace || !sel.Matches(labels.Set(podLabels)) {
		t.Errorf("the NetworkPolicy in %s selects %v, not the runner pods (%v)", np.Namespace, sel, podLabels)
	}
	_, port, err := runnerOf(specMap(&tmpl.Template.Spec), nil, "the docs' PodTemplate")
	if err != nil {
		t.Fatal(err)
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntVal != port {
		t.Fatalf("the NetworkPolicy's ingress %+v: want one rule, from the gateway, to port %d", np.Spec.Ingress, port)
	}
	from := np.Spec.Ingress[0].From[0]
	if !labels.SelectorFromSet(from.PodSelector.MatchLabels).Matches(labels.Set(gw.Spec.Template.Labels)) ||
		from.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != gw.Namespace {
		t.Errorf("the NetworkPolicy admits %+v, not the gateway's pods in %s", from, gw.Namespace)
	}
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || len(np.Spec.Egress) != 0 {
		t.Errorf("the NetworkPolicy lets runners reach %+v; want nothing", np.Spec.Egress)
	}

	// The docs' Secret, as the API server stores it.
	secret := get("Secret/toolgate-runner").(*corev1.Secret)
	secret.Data = map[string][]byte{"secret": []byte(testSecret)}
	secret.StringData = nil
	if secret.Namespace != testNS || k.Namespace != testNS {
		t.Fatalf("the tests' namespace %s is not the docs' %s", testNS, k.Namespace)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	write := func(b *Backend, n *network) {
		t.Helper()
		const id = "sb-docs"
		ep, created, err := b.Ensure(ctx, id)
		if err != nil || !created {
			t.Fatalf("Ensure from the docs' template = %v, %v", created, err)
		}
		s := session(t, ctx, ep, n.sandbox(id))
		if text, failed := call(t, ctx, s, "write_file", map[string]any{"path": "a.txt", "content": "docs\n"}); failed {
			t.Fatal(text)
		}
		if text, failed := call(t, ctx, s, "read_file", map[string]any{"path": "a.txt"}); failed || !strings.Contains(text, "docs") {
			t.Errorf("read_file: %s (failed %v)", text, failed)
		}
	}

	c := newCluster(tmpl, secret)
	n := newNetwork()
	startKubelet(t, c, n)
	b, err := New(ctx, Options{Namespace: k.Namespace, Template: k.Template, Image: k.Image, Secret: []byte(testSecret), Client: c, HTTPClient: n.client()})
	if err != nil {
		t.Fatalf("New from the docs' PodTemplate: %v", err)
	}
	write(b, n)

	st := get("SandboxTemplate/" + k.Template).(*agentv1beta1.SandboxTemplate)
	pool := get("SandboxWarmPool/" + k.Template).(*agentv1beta1.SandboxWarmPool)
	c = newCluster(secret, st, pool)
	n = newNetwork()
	startController(t, c, n)
	b, err = New(ctx, Options{Namespace: k.Namespace, Template: k.Template, Secret: []byte(testSecret), Client: c, HTTPClient: n.client()})
	if err != nil || b.Kind() != "sandboxclaim" {
		t.Fatalf("New from the docs' SandboxTemplate: %v", err)
	}
	write(b, n)
}
