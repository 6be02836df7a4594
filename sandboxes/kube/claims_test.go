package kube

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	agentv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/toolgate/toolgate/sandboxes"
)

func sandboxTemplate() *agentv1beta1.SandboxTemplate {
	return &agentv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: "toolgate-sandbox", Namespace: testNS},
		Spec: agentv1beta1.SandboxTemplateSpec{SandboxBlueprint: sandboxv1beta1.SandboxBlueprint{
			PodTemplate: sandboxv1beta1.PodTemplate{Spec: runnerSpec()}}}}
}

func warmPool(name string, replicas int32) *agentv1beta1.SandboxWarmPool {
	return &agentv1beta1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec: agentv1beta1.SandboxWarmPoolSpec{Replicas: &replicas, TemplateRef: agentv1beta1.SandboxTemplateRef{Name: "toolgate-sandbox"}}}
}

// controller plays agent-sandbox's claim controller: it keeps one warm
// runner started from the SandboxTemplate; a claim on the pool adopts it
// (else starts one cold), and its status becomes Ready with the pod's IP; a
// deleted claim's runner ends.
type controller struct {
	t     *testing.T
	c     dynamic.Interface
	net   *network
	mu    sync.Mutex
	warm  []warmRunner
	run   map[string]func() // claim name → stop
	warms int               // claims that adopted a warm runner
	wg    sync.WaitGroup
}

type warmRunner struct {
	ip   string
	stop func()
}

func startController(t *testing.T, c dynamic.Interface, n *network) *controller {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Resource(claimsResource).Namespace(testNS).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := &controller{t: t, c: c, net: n, run: map[string]func(){}}
	k.replenish(ctx)
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		for ev := range w.ResultChan() {
			cl := new(agentv1beta1.SandboxClaim)
			if err := decode(ev.Object, cl); err != nil {
				continue
			}
			switch {
			case ev.Type == watch.Added && len(cl.Status.Conditions) == 0:
				k.wg.Add(1)
				go func() { defer k.wg.Done(); k.claim(ctx, cl) }()
			case ev.Type == watch.Deleted:
				k.mu.Lock()
				stop := k.run[cl.Name]
				delete(k.run, cl.Name)
				k.mu.Unlock()
				if stop != nil {
					stop()
				}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		k.wg.Wait()
		k.mu.Lock()
		defer k.mu.Unlock()
		for _, s := range k.run {
			s()
		}
		for _, r := range k.warm {
			r.stop()
		}
	})
	return k
}

// start starts a runner from the SandboxTemplate.
func (k *controller) start(ctx context.Context) (warmRunner, error) {
	tmpl, err := getAs[agentv1beta1.SandboxTemplate](ctx, k.c, sandboxTemplatesResource, "toolgate-sandbox")
	if err != nil {
		return warmRunner{}, err
	}
	spec := &tmpl.Spec.PodTemplate.Spec
	addr, stop, err := startRunner(ctx, k.c, spec, k.t.TempDir())
	if err != nil {
		return warmRunner{}, err
	}
	ip := k.net.ip()
	_, port, _ := runnerOf(specMap(spec), nil, "")
	k.net.set(hostPort(ip, port), addr)
	return warmRunner{ip: ip, stop: func() { stop(); k.net.set(hostPort(ip, port), "") }}, nil
}

// replenish starts a warm runner (the pool's one replica).
func (k *controller) replenish(ctx context.Context) {
	r, err := k.start(ctx)
	if err != nil {
		k.t.Errorf("warm runner: %v", err)
		return
	}
	k.mu.Lock()
	k.warm = append(k.warm, r)
	k.mu.Unlock()
}

func (k *controller) claim(ctx context.Context, cl *agentv1beta1.SandboxClaim) {
	if p, err := getAs[agentv1beta1.SandboxWarmPool](ctx, k.c, warmPoolsResource, cl.Spec.WarmPoolRef.Name); err != nil || p.Spec.TemplateRef.Name != "toolgate-sandbox" {
		k.t.Errorf("claim %s names pool %q: %v; want the pool of template toolgate-sandbox", cl.Name, cl.Spec.WarmPoolRef.Name, err)
		return
	}
	k.mu.Lock()
	var r warmRunner
	warm := len(k.warm) > 0
	if warm {
		r, k.warm = k.warm[0], k.warm[1:]
		k.warms++
	}
	k.mu.Unlock()
	if warm {
		k.wg.Add(1)
		go func() { defer k.wg.Done(); k.replenish(ctx) }()
	} else {
		var err error
		if r, err = k.start(ctx); err != nil {
			k.t.Errorf("claim %s: %v", cl.Name, err)
			return
		}
	}
	k.mu.Lock()
	k.run[cl.Name] = r.stop
	k.mu.Unlock()
	cur, err := getAs[agentv1beta1.SandboxClaim](ctx, k.c, claimsResource, cl.Name)
	if err != nil || len(cur.Status.Conditions) > 0 {
		return
	}
	meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: string(sandboxv1beta1.SandboxConditionReady),
		Status: metav1.ConditionTrue, Reason: sandboxv1beta1.SandboxReasonDependenciesReady})
	cur.Status.SandboxStatus = agentv1beta1.SandboxStatus{Name: cl.Name, PodIPs: []string{r.ip}}
	if err := updateStatus(ctx, k.c, claimsResource, cur); err != nil && ctx.Err() == nil {
		k.t.Errorf("claim %s status: %v", cl.Name, err)
	}
}

// claimBackend is a claim backend: the API server holds the Secret, no
// PodTemplate, the SandboxTemplate and its pool.
func claimBackend(t *testing.T, ready time.Duration, n *network, objs ...runtime.Object) (*Backend, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	c := newCluster(append([]runtime.Object{runnerSecretObject(), sandboxTemplate(), warmPool("toolgate-pool", 1)}, objs...)...)
	b, err := New(context.Background(), Options{Namespace: testNS, Template: "toolgate-sandbox", Deployment: "team-a",
		Secret: []byte(testSecret), Ready: ready, Client: c, HTTPClient: n.client()})
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind() != "sandboxclaim" {
		t.Fatalf("kind %q, want sandboxclaim", b.Kind())
	}
	return b, c
}

// TestClaimsContract: the claim path over client-go's fake dynamic client
// holding agent-sandbox's objects, each claim's pod a real toolgate
// runner, the first adopted from the warm pool.
func TestClaimsContract(t *testing.T) {
	n := newNetwork()
	b, c := claimBackend(t, time.Minute, n)
	k := startController(t, c, n)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	contract(t, ctx, b, n.sandbox)
	k.mu.Lock()
	warms := k.warms
	k.mu.Unlock()
	if warms == 0 {
		t.Errorf("no claim adopted a warm runner")
	}
	key := sandboxes.Key{Principal: sandboxes.Hash("alice"), Conversation: sandboxes.Hash("conv-1")}
	if _, _, err := b.Ensure(sandboxes.WithKey(ctx, key), "sb-labelled"); err != nil {
		t.Fatal(err)
	}
	cl, err := getAs[agentv1beta1.SandboxClaim](ctx, c, claimsResource, "sb-labelled")
	if err != nil {
		t.Fatal(err)
	}
	if gvk := cl.GroupVersionKind(); gvk != agentv1beta1.GroupVersion.WithKind("SandboxClaim") {
		t.Errorf("the claim was sent as %v; want %v SandboxClaim", gvk, agentv1beta1.GroupVersion)
	}
	if cl.Labels[LabelPrincipal] != key.Principal || cl.Labels[LabelConversation] != key.Conversation || cl.Labels[LabelDeployment] != "team-a" {
		t.Errorf("claim labels %v", cl.Labels)
	}
}

// TestClaimExpiredIsMadeAnew: an expired claim is deleted and made anew.
func TestClaimExpiredIsMadeAnew(t *testing.T) {
	n := newNetwork()
	b, c := claimBackend(t, time.Minute, n)
	startController(t, c, n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const id = "sb-expiring"
	if _, _, err := b.Ensure(ctx, id); err != nil {
		t.Fatal(err)
	}
	cl, err := getAs[agentv1beta1.SandboxClaim](ctx, c, claimsResource, id)
	if err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{Type: string(sandboxv1beta1.SandboxConditionReady),
		Status: metav1.ConditionFalse, Reason: agentv1beta1.ClaimExpiredReason})
	cl.Status.SandboxStatus = agentv1beta1.SandboxStatus{}
	if err := updateStatus(ctx, c, claimsResource, cl); err != nil {
		t.Fatal(err)
	}
	if _, created, err := b.Ensure(ctx, id); err != nil || !created {
		t.Errorf("Ensure after the claim expired = %v, %v; want created anew", created, err)
	}
}

// TestClaimNotReady: no controller, so the claim never becomes Ready:
// unavailable, naming the claim and asking whether the controller runs.
func TestClaimNotReady(t *testing.T) {
	b, _ := claimBackend(t, 300*time.Millisecond, newNetwork())
	_, created, err := b.Ensure(context.Background(), "sb-slow")
	if !errors.Is(err, sandboxes.ErrUnavailable) || created || !strings.Contains(err.Error(), "sandboxclaim "+testNS+"/sb-slow") || !strings.Contains(err.Error(), "controller") {
		t.Errorf("Ensure without a controller = %v, %v; want ErrUnavailable naming the claim", created, err)
	}
}

// TestClaimTemplatesRefused: with agent-sandbox, the template must have
// exactly one pool, and the image is the template's.
func TestClaimTemplatesRefused(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		objs  []runtime.Object
		image string
		want  string
	}{
		"no pool":    {[]runtime.Object{sandboxTemplate()}, "", "no SandboxWarmPool in " + testNS + " references"},
		"two pools":  {[]runtime.Object{sandboxTemplate(), warmPool("p1", 0), warmPool("p2", 2)}, "", "SandboxWarmPools p1, p2 all reference"},
		"image set":  {[]runtime.Object{sandboxTemplate(), warmPool("p1", 0)}, "registry.example.com/x:1", "chooses the image of its pods"},
		"no runners": {nil, "", "no PodTemplate or agent-sandbox SandboxTemplate"},
	} {
		_, err := New(ctx, Options{Namespace: testNS, Template: "toolgate-sandbox", Image: tc.image, Secret: []byte(testSecret),
			Client: newCluster(tc.objs...)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v; want an error saying %q", name, err, tc.want)
		}
	}
}

// TestClaimsWithoutPodTemplateRights: a gateway given only the claims'
// Role (reading a PodTemplate is forbidden) uses the SandboxTemplate; one
// with neither says what to grant.
func TestClaimsWithoutPodTemplateRights(t *testing.T) {
	forbidden := func(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
		c := newCluster(objs...)
		c.PrependReactor("get", "podtemplates", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "podtemplates"}, "toolgate-sandbox", errors.New("RBAC"))
		})
		return c
	}
	o := Options{Namespace: testNS, Template: "toolgate-sandbox", Secret: []byte(testSecret),
		Client: forbidden(runnerSecretObject(), sandboxTemplate(), warmPool("toolgate-pool", 0))}
	if b, err := New(context.Background(), o); err != nil || b.Kind() != "sandboxclaim" {
		t.Errorf("New with podtemplates forbidden = %v; want the claim backend", err)
	}
	o.Client = forbidden(runnerSecretObject())
	if _, err := New(context.Background(), o); err == nil || !strings.Contains(err.Error(), "needs get on podtemplates") {
		t.Errorf("New with neither template readable = %v; want what to grant", err)
	}
}
