package kube

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	agentv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// claimKind holds each sandbox in an agent-sandbox SandboxClaim on the
// SandboxWarmPool that references the template: the pool's warm pods are
// adopted, else the controller starts one from the template (cold).
type claimKind struct {
	claims   dynamic.ResourceInterface // in ns
	ns, pool string
	port     int32
}

// newClaimKind finds the SandboxTemplate o.Template, checks its runner
// container, and finds the one SandboxWarmPool that references it (a claim
// names a pool, not a template).
func newClaimKind(ctx context.Context, o Options) (*claimKind, error) {
	what := "SandboxTemplate " + o.Namespace + "/" + o.Template
	u, err := o.Client.Resource(sandboxTemplatesResource).Namespace(o.Namespace).Get(ctx, o.Template, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err): // the template, or the CRD itself
		return nil, fmt.Errorf("%w: %s", errNoTemplate, what)
	case err != nil:
		return nil, fmt.Errorf("cannot read %s (the gateway's ServiceAccount needs get on sandboxtemplates.extensions.agents.x-k8s.io): %w", what, err)
	}
	var t agentv1beta1.SandboxTemplate
	if err := decode(u, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if o.Image != "" {
		return nil, fmt.Errorf("sandbox.kubernetes.image is set but %s chooses the image of its pods: set it there and leave image out", what)
	}
	_, port, err := runnerOf(&t.Spec.PodTemplate.Spec, o.Secret, what)
	if err != nil {
		return nil, err
	}
	pools, err := o.Client.Resource(warmPoolsResource).Namespace(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot list SandboxWarmPools in %s (the gateway's ServiceAccount needs list on sandboxwarmpools.extensions.agents.x-k8s.io): %w", o.Namespace, err)
	}
	var names []string
	for i := range pools.Items {
		var p agentv1beta1.SandboxWarmPool
		if err := decode(&pools.Items[i], &p); err != nil {
			return nil, fmt.Errorf("SandboxWarmPool %s/%s: %w", o.Namespace, pools.Items[i].GetName(), err)
		}
		if p.Spec.TemplateRef.Name == o.Template {
			names = append(names, p.Name)
		}
	}
	switch len(names) {
	case 0:
		return nil, fmt.Errorf("no SandboxWarmPool in %s references %s: a SandboxClaim names a pool, so create one with sandboxTemplateRef: {name: %s} (replicas: 0 starts every sandbox cold)", o.Namespace, what, o.Template)
	case 1:
		return &claimKind{claims: o.Client.Resource(claimsResource).Namespace(o.Namespace), ns: o.Namespace, pool: names[0], port: port}, nil
	}
	return nil, fmt.Errorf("SandboxWarmPools %s all reference %s: keep one, so that every gateway claims from the same pool", strings.Join(names, ", "), what)
}

func (k *claimKind) name() string { return "sandboxclaim" }

func (k *claimKind) create(ctx context.Context, name string, labels map[string]string) error {
	cl := &agentv1beta1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.ns, Labels: labels},
		Spec:       agentv1beta1.SandboxClaimSpec{WarmPoolRef: agentv1beta1.SandboxWarmPoolRef{Name: k.pool}},
	}
	u, err := encode(cl, agentv1beta1.GroupVersion.WithKind("SandboxClaim"))
	if err != nil {
		return err
	}
	_, err = k.claims.Create(ctx, u, metav1.CreateOptions{})
	return err
}

func (k *claimKind) get(ctx context.Context, name string) (*object, error) {
	u, err := k.claims.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return notFound(nil, err)
	}
	var cl agentv1beta1.SandboxClaim
	if err := decode(u, &cl); err != nil {
		return nil, fmt.Errorf("sandboxclaim %s/%s: %w", k.ns, name, err)
	}
	return k.object(&cl), nil
}

func (k *claimKind) remove(ctx context.Context, name string, uid types.UID) error {
	return k.claims.Delete(ctx, name, preconditioned(uid))
}

func (k *claimKind) watch(ctx context.Context, name, rv string) (watch.Interface, error) {
	return k.claims.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: rv})
}

func (k *claimKind) convert(o runtime.Object) (*object, bool) {
	var cl agentv1beta1.SandboxClaim
	if err := decode(o, &cl); err != nil {
		return nil, false
	}
	return k.object(&cl), true
}

func (k *claimKind) list(ctx context.Context, selector string) ([]object, error) {
	l, err := k.claims.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := make([]object, len(l.Items))
	for i := range l.Items {
		var cl agentv1beta1.SandboxClaim
		if err := decode(&l.Items[i], &cl); err != nil {
			return nil, fmt.Errorf("sandboxclaim %s/%s: %w", k.ns, l.Items[i].GetName(), err)
		}
		out[i] = *k.object(&cl)
	}
	return out, nil
}

// object reads a claim: it answers once Ready with a pod IP (the
// controller mirrors its Sandbox's); it is dead once its pod finished or
// the claim expired.
func (k *claimKind) object(cl *agentv1beta1.SandboxClaim) *object {
	o := &object{name: cl.Name, uid: cl.UID, rv: cl.ResourceVersion, labels: cl.Labels, deleting: cl.DeletionTimestamp != nil}
	if f := meta.FindStatusCondition(cl.Status.Conditions, string(sandboxv1beta1.SandboxConditionFinished)); f != nil && f.Status == metav1.ConditionTrue {
		o.dead = "finished: " + f.Reason
		return o
	}
	r := meta.FindStatusCondition(cl.Status.Conditions, string(sandboxv1beta1.SandboxConditionReady))
	switch {
	case r == nil:
		o.waiting = "no Ready condition yet (is the agent-sandbox controller running?)"
	case r.Status != metav1.ConditionTrue && (r.Reason == agentv1beta1.ClaimExpiredReason || r.Reason == sandboxv1beta1.SandboxReasonExpired):
		o.dead = "expired: " + r.Reason
	case r.Status != metav1.ConditionTrue:
		o.waiting = "not Ready: " + r.Reason + " " + r.Message
	case len(cl.Status.SandboxStatus.PodIPs) == 0:
		o.waiting = "Ready but no pod IP yet"
	default:
		o.addr = hostPort(cl.Status.SandboxStatus.PodIPs[0], k.port)
	}
	return o
}
