package kube

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/toolgate/toolgate/runner"
	"github.com/toolgate/toolgate/sandboxes"
	"github.com/toolgate/toolgate/tool"
)

func podTemplate(spec corev1.PodSpec) *corev1.PodTemplate {
	return &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "toolgate-sandbox", Namespace: testNS},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "blue"}}, Spec: spec}}
}

// podBackend is a Pod backend on a fake API server holding the tests'
// PodTemplate and runner Secret.
func podBackend(t *testing.T, ready time.Duration, n *network, objs ...runtime.Object) (*Backend, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	c := newCluster(append([]runtime.Object{podTemplate(runnerSpec()), runnerSecretObject()}, objs...)...)
	b, err := New(context.Background(), Options{Namespace: testNS, Template: "toolgate-sandbox", Image: "registry.example.com/toolgate-runner:1.0",
		Deployment: "team-a", Secret: []byte(testSecret), Ready: ready, Client: c, HTTPClient: n.client()})
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind() != "pod" {
		t.Fatalf("kind %q, want pod", b.Kind())
	}
	return b, c
}

// TestPodsContract: the Pod backend over client-go's fake dynamic client, each
// pod a real toolgate runner; then what the pods it made look like.
func TestPodsContract(t *testing.T) {
	n := newNetwork()
	b, c := podBackend(t, time.Minute, n)
	k := startKubelet(t, c, n)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	contract(t, ctx, b, n.sandbox)
	if got := k.runners(); got != 3 {
		t.Errorf("%d runners run; want 3 (one per pod)", got)
	}

	key := sandboxes.Key{Principal: sandboxes.Hash("alice"), Conversation: sandboxes.Hash("conv-1")}
	if _, _, err := b.Ensure(sandboxes.WithKey(ctx, key), "sb-labelled"); err != nil {
		t.Fatal(err)
	}
	p, err := getAs[corev1.Pod](ctx, c, podsResource, "sb-labelled")
	if err != nil {
		t.Fatal(err)
	}
	if p.APIVersion != "v1" || p.Kind != "Pod" { // what an API server requires of a create
		t.Errorf("the pod was sent as apiVersion %q kind %q; want v1 Pod", p.APIVersion, p.Kind)
	}
	want := map[string]string{LabelManagedBy: "toolgate", LabelComponent: "sandbox", LabelDeployment: "team-a",
		LabelPrincipal: key.Principal, LabelConversation: key.Conversation, "team": "blue"}
	for l, v := range want {
		if p.Labels[l] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", l, p.Labels[l], v, p.Labels)
		}
	}
	if img := p.Spec.Containers[0].Image; img != "registry.example.com/toolgate-runner:1.0" {
		t.Errorf("runner image %q: Options.Image does not replace the template's", img)
	}
	if a := p.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken %v: a runner pod must get no API credentials", a)
	}
	js, _ := json.Marshal(p)
	if strings.Contains(string(js), testSecret) {
		t.Errorf("the pod spells the runner secret: %s", js)
	}
	if ref := p.Spec.Containers[0].Env[0].ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "toolgate-runner" {
		t.Errorf("the runner's secret does not come from Secret toolgate-runner: %+v", p.Spec.Containers[0].Env)
	}
}

// TestPodEndedIsMadeAnew: a pod whose runner ended (phase Failed) is
// deleted and made anew by the next Ensure, which says it created it; the
// workspace is new.
func TestPodEndedIsMadeAnew(t *testing.T) {
	n := newNetwork()
	b, c := podBackend(t, time.Minute, n)
	startKubelet(t, c, n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const id = "sb-ended"
	ep, _, err := b.Ensure(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if text, failed := call(t, ctx, session(t, ctx, ep, n.sandbox(id)), "write_file", map[string]any{"path": "f.txt", "content": "before\n"}); failed {
		t.Fatal(text)
	}
	p, err := getAs[corev1.Pod](ctx, c, podsResource, id)
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodFailed
	if err := updateStatus(ctx, c, podsResource, p); err != nil {
		t.Fatal(err)
	}
	if cnt, err := b.Count(ctx); err != nil || cnt != 0 {
		t.Errorf("Count with the pod Failed = %d, %v; want 0", cnt, err)
	}
	ep2, created, err := b.Ensure(ctx, id)
	if err != nil || !created {
		t.Fatalf("Ensure after the pod failed = %q, %v, %v; want created anew", ep2, created, err)
	}
	if ep2 == ep {
		t.Errorf("the new pod answers at the old address %s", ep)
	}
	if text, failed := call(t, ctx, session(t, ctx, ep2, n.sandbox(id)), "read_file", map[string]any{"path": "f.txt"}); !failed {
		t.Errorf("the pod made anew has the old workspace: %s", text)
	}
}

// TestPodNotReady: a pod that never becomes Ready (no kubelet here) makes
// Ensure give up after Options.Ready with an error wrapping
// ErrUnavailable that names the pod, and says it made no sandbox; the pod
// was created once and a retry finds it; the caller's deadline is
// unavailable too, its cancellation is its own.
func TestPodNotReady(t *testing.T) {
	b, _ := podBackend(t, 300*time.Millisecond, newNetwork())
	ctx := context.Background()
	_, created, err := b.Ensure(ctx, "sb-slow")
	if !errors.Is(err, sandboxes.ErrUnavailable) || created {
		t.Fatalf("Ensure without a kubelet = created %v, %v; want ErrUnavailable, nothing created", created, err)
	}
	if !strings.Contains(err.Error(), "pod "+testNS+"/sb-slow") || !strings.Contains(err.Error(), "not Ready") {
		t.Errorf("error %q does not name the pod and what it waits for", err)
	}
	_, created, err = b.Ensure(ctx, "sb-slow")
	if !errors.Is(err, sandboxes.ErrUnavailable) || created {
		t.Errorf("retry = created %v, %v; want the same pod, still unavailable", created, err)
	}
	if n, err := b.Count(ctx); err != nil || n != 1 {
		t.Errorf("Count = %d, %v; want 1", n, err)
	}
	dctx, dcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer dcancel()
	if _, _, err := b.Ensure(dctx, "sb-slow"); !errors.Is(err, sandboxes.ErrUnavailable) {
		t.Errorf("Ensure past the caller's deadline = %v; want ErrUnavailable", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := b.Ensure(cctx, "sb-slow"); !errors.Is(err, context.Canceled) {
		t.Errorf("Ensure with the caller gone = %v; want its context's error", err)
	}
}

// TestPodForeignRefused: a pod of the sandbox's name that is not the
// deployment's (no labels, or another deployment's) is neither adopted,
// nor deleted, nor counted.
func TestPodForeignRefused(t *testing.T) {
	foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sb-taken", Namespace: testNS}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sb-other", Namespace: testNS,
		Labels: map[string]string{LabelManagedBy: "toolgate", LabelComponent: "sandbox", LabelDeployment: "team-b"}}}
	b, c := podBackend(t, time.Minute, newNetwork(), foreign, other)
	ctx := context.Background()
	for _, id := range []string{"sb-taken", "sb-other"} {
		if _, _, err := b.Ensure(ctx, id); err == nil || errors.Is(err, sandboxes.ErrUnavailable) || !strings.Contains(err.Error(), "refusing to adopt") {
			t.Errorf("Ensure(%s) over a foreign pod = %v; want a refusal", id, err)
		}
		if err := b.Delete(ctx, id); err == nil {
			t.Errorf("Delete(%s) deleted a foreign pod", id)
		}
		if _, err := getAs[corev1.Pod](ctx, c, podsResource, id); err != nil {
			t.Errorf("pod %s: %v", id, err)
		}
	}
	if n, err := b.Count(ctx); err != nil || n != 0 {
		t.Errorf("Count = %d, %v; want 0 (neither pod is team-a's)", n, err)
	}
	if _, _, err := b.Ensure(ctx, "Not_A_Name"); err == nil {
		t.Errorf("Ensure of an id that cannot name a pod succeeded")
	}
}

// TestPodAPIErrors: a refusal by the API server that a retry will not
// change (forbidden) is said with what to grant; an API server that does
// not answer is unavailable.
func TestPodAPIErrors(t *testing.T) {
	b, c := podBackend(t, time.Minute, newNetwork())
	ctx := context.Background()
	c.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "sb-x", errors.New("RBAC"))
	})
	_, _, err := b.Ensure(ctx, "sb-x")
	if err == nil || errors.Is(err, sandboxes.ErrUnavailable) || !strings.Contains(err.Error(), "ServiceAccount needs create, get, list, watch and delete on pods") {
		t.Errorf("Ensure forbidden = %v; want a refusal naming the RBAC to grant", err)
	}
	c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd down")
	})
	if _, err := b.Count(ctx); !errors.Is(err, sandboxes.ErrUnavailable) {
		t.Errorf("Count with the API server unavailable = %v; want ErrUnavailable", err)
	}
}

// TestTemplatesRefused: a template the runner could not start from, or
// that spells the secret, is refused at start, saying what to change.
func TestTemplatesRefused(t *testing.T) {
	ctx := context.Background()
	twoContainers := runnerSpec()
	twoContainers.Containers[0].Name = "main"
	twoContainers.Containers = append(twoContainers.Containers, corev1.Container{Name: "sidecar"})
	noPort := runnerSpec()
	noPort.Containers[0].Ports = nil
	noSecret := runnerSpec()
	noSecret.Containers[0].Env = []corev1.EnvVar{{Name: secretEnv, Value: "something-else-entirely"}}
	byValue := runnerSpec()
	byValue.Containers[0].Env = append(byValue.Containers[0].Env, corev1.EnvVar{Name: "COPY", Value: testSecret})
	inArgs := runnerSpec()
	inArgs.InitContainers = []corev1.Container{{Name: "init", Args: []string{"echo", testSecret}}}
	for name, tc := range map[string]struct {
		objs []runtime.Object
		want string
	}{
		"no template":       {nil, `no PodTemplate or agent-sandbox SandboxTemplate named "toolgate-sandbox"`},
		"two containers":    {[]runtime.Object{podTemplate(twoContainers)}, `no runner container: name it "runner"`},
		"no port":           {[]runtime.Object{podTemplate(noPort)}, "declares no runner port"},
		"no secret ref":     {[]runtime.Object{podTemplate(noSecret)}, "takes nothing from a Secret"},
		"secret by value":   {[]runtime.Object{podTemplate(byValue)}, "spells the runner secret"},
		"secret in an init": {[]runtime.Object{podTemplate(inArgs)}, "spells the runner secret"},
	} {
		_, err := New(ctx, Options{Namespace: testNS, Template: "toolgate-sandbox", Secret: []byte(testSecret), Client: newCluster(tc.objs...)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v; want an error saying %q", name, err, tc.want)
		}
	}
	for _, o := range []Options{{Template: "x"}, {Namespace: testNS}, {Namespace: "Bad_NS", Template: "x"}, {Namespace: testNS, Template: "x", Deployment: "not a label"}} {
		o.Client = newCluster()
		if _, err := New(ctx, o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// TestPodRunnerSilent: a pod Ready whose runner does not answer is
// unavailable, naming the pod and its address.
func TestPodRunnerSilent(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sb-silent", Namespace: testNS,
		Labels: map[string]string{LabelManagedBy: "toolgate", LabelComponent: "sandbox", LabelDeployment: "team-a"}},
		Spec: runnerSpec(),
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.9.250",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	b, _ := podBackend(t, time.Minute, newNetwork(), pod)
	_, created, err := b.Ensure(context.Background(), "sb-silent")
	if !errors.Is(err, sandboxes.ErrUnavailable) || created || !strings.Contains(err.Error(), "127.0.9.250:8790 does not answer") {
		t.Errorf("Ensure of a silent runner = %v, %v; want ErrUnavailable naming its address", created, err)
	}
}

// TestPodDeleteRunnerHung: a pod whose runner accepts the pre-delete
// call and never answers is deleted all the same, once
// runnerDeleteTimeout gives up on the runner.
func TestPodDeleteRunnerHung(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts, reads, never answers
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, nc); nc.Close() }()
		}
	}()
	n := newNetwork()
	n.set("127.0.9.251:8790", ln.Addr().String())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sb-hung", Namespace: testNS,
		Labels: map[string]string{LabelManagedBy: "toolgate", LabelComponent: "sandbox", LabelDeployment: "team-a"}},
		Spec: runnerSpec(),
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.9.251",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	b, c := podBackend(t, time.Minute, n, pod)
	ctx := context.Background()
	if err := b.Delete(ctx, "sb-hung"); err != nil {
		t.Fatalf("Delete with a hung runner: %v", err)
	}
	if _, err := getAs[corev1.Pod](ctx, c, podsResource, "sb-hung"); !apierrors.IsNotFound(err) {
		t.Errorf("the pod of the hung runner: %v", err)
	}
}

// TestPodReapTellsEvents: when the reaper deletes a pod's sandbox, the
// events after its last call (the end of the process that call started,
// which the delete stops) are told, with the principal and conversation
// of its calls, as the runner backend's are: the backend deletes the
// sandbox on the pod's runner first, and the runner's answer carries
// them. (The pod was deleted with them unsaid.)
func TestPodReapTellsEvents(t *testing.T) {
	n := newNetwork()
	b, c := podBackend(t, time.Minute, n)
	startKubelet(t, c, n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const idle = 300 * time.Millisecond
	s, err := sandboxes.New(sandboxes.Options{Backend: b, Secret: []byte(testSecret), HTTPClient: n.client(), Idle: idle})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var (
		mu   sync.Mutex
		told []string
	)
	s.OnProcessEvent(func(call tool.Call, ev runner.ProcessEvent) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, ev.Kind+" "+call.Principal+"/"+call.Session)
	})
	start := s.Tools([]tool.Definition{{Name: "start_process"}})[0]
	res, err := start.Run(ctx, tool.Call{Name: "start_process", Principal: "alice", Session: "c1",
		Args: []byte(`{"command":"echo ready; exec sleep 1000","until":"ready","yield_ms":20000}`)})
	if err != nil || res.Error != nil {
		t.Fatalf("start_process: %v %+v", err, res.Error)
	}
	time.Sleep(idle + 100*time.Millisecond) // past idle: a lower bound
	if got, err := s.Reap(ctx); err != nil || len(got) != 1 {
		t.Fatalf("reaped %v, %v", got, err)
	}
	if _, err := getAs[corev1.Pod](ctx, c, podsResource, sandboxes.ID("alice", "c1")); !apierrors.IsNotFound(err) {
		t.Errorf("the reaped sandbox's pod: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"start alice/c1", "end alice/c1"}; !slices.Equal(told, want) {
		t.Errorf("told %q, want %q", told, want)
	}
}
