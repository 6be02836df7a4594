package kube

import (
	"context"
	"fmt"
	"maps"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// podKind holds each sandbox in a Pod made from a PodTemplate.
type podKind struct {
	resource                                  // the pods
	templates       dynamic.ResourceInterface // in ns
	ns, tmpl, image string
	secret          []byte
}

// A templateSpec is a PodTemplate's template: the labels and annotations
// of its pods, and their spec, kept whole (unstructured) so that every
// field of it, known to this client or not, reaches the pods.
type templateSpec struct {
	labels, annotations map[string]string
	spec                map[string]any
	container           int // the runner's, in spec's containers
}

func (k *podKind) name() string { return "pod" }

// template reads and checks the PodTemplate; it is read again for every
// pod made, so an edit applies to the next sandbox without a restart.
func (k *podKind) template(ctx context.Context) (*templateSpec, error) {
	what := "PodTemplate " + k.ns + "/" + k.tmpl
	u, err := k.templates.Get(ctx, k.tmpl, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: %s", errNoTemplate, what)
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("%w: cannot read %s: the gateway's ServiceAccount needs get on podtemplates in %s (docs/deploy.md): %w", errTemplate, what, k.ns, err)
	case err != nil:
		return nil, fmt.Errorf("cannot read %s: %w", what, err)
	}
	var t templateSpec
	spec, _, err := unstructured.NestedMap(u.Object, "template", "spec")
	if err == nil {
		t.labels, _, err = unstructured.NestedStringMap(u.Object, "template", "metadata", "labels")
	}
	if err == nil {
		t.annotations, _, err = unstructured.NestedStringMap(u.Object, "template", "metadata", "annotations")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errTemplate, what, err)
	}
	if t.container, _, err = runnerOf(spec, k.secret, what); err != nil {
		return nil, fmt.Errorf("%w: %v", errTemplate, err)
	}
	t.spec = spec
	return &t, nil
}

func (k *podKind) create(ctx context.Context, name string, labels map[string]string) error {
	t, err := k.template(ctx)
	if err != nil {
		return err
	}
	if k.image != "" {
		cs, _, err := unstructured.NestedSlice(t.spec, "containers")
		if err != nil {
			return err
		}
		c, ok := cs[t.container].(map[string]any) // (runnerOf read it as a container)
		if !ok {
			return fmt.Errorf("%w: PodTemplate %s/%s: container %d is not an object", errTemplate, k.ns, k.tmpl, t.container)
		}
		c["image"] = k.image
		if err := unstructured.SetNestedSlice(t.spec, cs, "containers"); err != nil {
			return err
		}
	}
	if t.spec["automountServiceAccountToken"] == nil {
		t.spec["automountServiceAccountToken"] = false // a runner needs no API credentials; commands must not find any
	}
	l := maps.Clone(t.labels)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, labels)
	p := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": t.spec}}
	p.SetName(name)
	p.SetNamespace(k.ns)
	p.SetLabels(l)
	if len(t.annotations) > 0 {
		p.SetAnnotations(t.annotations)
	}
	_, err = k.client.Create(ctx, p, metav1.CreateOptions{})
	return err
}

// object reads what Ensure needs from a pod: it answers once Running,
// Ready and given an IP; it is dead once Failed or Succeeded.
func (k *podKind) object(u *unstructured.Unstructured) (*object, error) {
	var p pod
	if err := decode(u, &p); err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", k.ns, u.GetName(), err)
	}
	o := &object{name: u.GetName(), uid: u.GetUID(), rv: u.GetResourceVersion(), labels: u.GetLabels(), deleting: u.GetDeletionTimestamp() != nil}
	switch p.Status.Phase {
	case podFailed, podSucceeded:
		o.dead = "pod " + p.Status.Phase
		return o, nil
	}
	ready := false
	var why []string
	why = append(why, "phase "+p.Status.Phase)
	for _, c := range p.Status.Conditions {
		switch {
		case c.Type == podReady:
			ready = c.Status == conditionTrue
		case c.Type == podScheduled && c.Status == conditionFalse:
			why = append(why, "unscheduled: "+c.Reason+" "+c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			why = append(why, cs.Name+" "+w.Reason)
		}
	}
	_, port, err := p.Spec.runner("")
	if ready && p.Status.Phase == podRunning && p.Status.PodIP != "" && err == nil {
		o.addr = hostPort(p.Status.PodIP, port)
	} else if !ready {
		why = append(why, "not Ready")
	}
	o.waiting = strings.Join(why, ", ")
	return o, nil
}
