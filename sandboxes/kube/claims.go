package kube

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// claimKind holds each sandbox in an agent-sandbox SandboxClaim on the
// SandboxWarmPool that references the template: the pool's warm pods are
// adopted, else the controller starts one from the template (cold).
type claimKind struct {
	resource // the claims
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
	spec, _, err := unstructured.NestedMap(u.Object, "spec", "podTemplate", "spec")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if o.Image != "" {
		return nil, fmt.Errorf("sandbox.kubernetes.image is set but %s chooses the image of its pods: set it there and leave image out", what)
	}
	_, port, err := runnerOf(spec, o.Secret, what)
	if err != nil {
		return nil, err
	}
	pools, err := o.Client.Resource(warmPoolsResource).Namespace(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot list SandboxWarmPools in %s (the gateway's ServiceAccount needs list on sandboxwarmpools.extensions.agents.x-k8s.io): %w", o.Namespace, err)
	}
	var names []string
	for _, p := range pools.Items {
		ref, _, err := unstructured.NestedString(p.Object, "spec", "sandboxTemplateRef", "name")
		if err != nil {
			return nil, fmt.Errorf("SandboxWarmPool %s/%s: %w", o.Namespace, p.GetName(), err)
		}
		if ref == o.Template {
			names = append(names, p.GetName())
		}
	}
	switch len(names) {
	case 0:
		return nil, fmt.Errorf("no SandboxWarmPool in %s references %s: a SandboxClaim names a pool, so create one with sandboxTemplateRef: {name: %s} (replicas: 0 starts every sandbox cold)", o.Namespace, what, o.Template)
	case 1:
		k := &claimKind{ns: o.Namespace, pool: names[0], port: port}
		k.resource = resource{client: o.Client.Resource(claimsResource).Namespace(o.Namespace), read: k.object}
		return k, nil
	}
	return nil, fmt.Errorf("SandboxWarmPools %s all reference %s: keep one, so that every gateway claims from the same pool", strings.Join(names, ", "), what)
}

func (k *claimKind) name() string { return "sandboxclaim" }

func (k *claimKind) create(ctx context.Context, name string, labels map[string]string) error {
	cl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": agentSandbox.String(), "kind": "SandboxClaim",
		"spec": map[string]any{"warmPoolRef": map[string]any{"name": k.pool}},
	}}
	cl.SetName(name)
	cl.SetNamespace(k.ns)
	cl.SetLabels(labels)
	_, err := k.client.Create(ctx, cl, metav1.CreateOptions{})
	return err
}

// object reads a claim: it answers once Ready with a pod IP (the
// controller mirrors its Sandbox's); it is dead once its pod finished or
// the claim expired.
func (k *claimKind) object(u *unstructured.Unstructured) (*object, error) {
	var cl claim
	if err := decode(u, &cl); err != nil {
		return nil, fmt.Errorf("sandboxclaim %s/%s: %w", k.ns, u.GetName(), err)
	}
	o := &object{name: u.GetName(), uid: u.GetUID(), rv: u.GetResourceVersion(), labels: u.GetLabels(), deleting: u.GetDeletionTimestamp() != nil}
	if f := meta.FindStatusCondition(cl.Status.Conditions, sandboxFinished); f != nil && f.Status == metav1.ConditionTrue {
		o.dead = "finished: " + f.Reason
		return o, nil
	}
	r := meta.FindStatusCondition(cl.Status.Conditions, sandboxReady)
	switch {
	case r == nil:
		o.waiting = "no Ready condition yet (is the agent-sandbox controller running?)"
	case r.Status != metav1.ConditionTrue && (r.Reason == claimExpired || r.Reason == sandboxExpired):
		o.dead = "expired: " + r.Reason
	case r.Status != metav1.ConditionTrue:
		o.waiting = "not Ready: " + r.Reason + " " + r.Message
	case len(cl.Status.Sandbox.PodIPs) == 0:
		o.waiting = "Ready but no pod IP yet"
	default:
		o.addr = hostPort(cl.Status.Sandbox.PodIPs[0], k.port)
	}
	return o, nil
}
