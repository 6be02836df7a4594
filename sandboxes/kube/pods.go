package kube

import (
	"context"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// podKind holds each sandbox in a Pod made from a PodTemplate.
type podKind struct {
	pods, templates dynamic.ResourceInterface // in ns
	ns, tmpl, image string
	secret          []byte
}

func (k *podKind) name() string { return "pod" }

// template reads and checks the PodTemplate; it is read again for every
// pod made, so an edit applies to the next sandbox without a restart.
func (k *podKind) template(ctx context.Context) (*corev1.PodTemplateSpec, error) {
	u, err := k.templates.Get(ctx, k.tmpl, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: PodTemplate %s/%s", errNoTemplate, k.ns, k.tmpl)
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("%w: cannot read PodTemplate %s/%s: the gateway's ServiceAccount needs get on podtemplates in %s (docs/deploy.md): %w", errTemplate, k.ns, k.tmpl, k.ns, err)
	case err != nil:
		return nil, fmt.Errorf("cannot read PodTemplate %s/%s: %w", k.ns, k.tmpl, err)
	}
	var pt corev1.PodTemplate
	if err := decode(u, &pt); err != nil {
		return nil, fmt.Errorf("%w: PodTemplate %s/%s: %v", errTemplate, k.ns, k.tmpl, err)
	}
	t := &pt.Template
	if _, _, err := runnerOf(&t.Spec, k.secret, "PodTemplate "+k.ns+"/"+k.tmpl); err != nil {
		return nil, fmt.Errorf("%w: %v", errTemplate, err)
	}
	return t, nil
}

func (k *podKind) create(ctx context.Context, name string, labels map[string]string) error {
	t, err := k.template(ctx)
	if err != nil {
		return err
	}
	c, _, _ := runnerOf(&t.Spec, nil, "")
	if k.image != "" {
		t.Spec.Containers[c].Image = k.image
	}
	if t.Spec.AutomountServiceAccountToken == nil {
		no := false // a runner needs no API credentials; commands must not find any
		t.Spec.AutomountServiceAccountToken = &no
	}
	l := maps.Clone(t.Labels)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, labels)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.ns, Labels: l, Annotations: t.Annotations},
		Spec:       t.Spec,
	}
	u, err := encode(pod, corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		return err
	}
	_, err = k.pods.Create(ctx, u, metav1.CreateOptions{})
	return err
}

func (k *podKind) get(ctx context.Context, name string) (*object, error) {
	u, err := k.pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return notFound(nil, err)
	}
	var p corev1.Pod
	if err := decode(u, &p); err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", k.ns, name, err)
	}
	return podObject(&p), nil
}

func (k *podKind) remove(ctx context.Context, name string, uid types.UID) error {
	return k.pods.Delete(ctx, name, preconditioned(uid))
}

func (k *podKind) watch(ctx context.Context, name, rv string) (watch.Interface, error) {
	return k.pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: rv})
}

func (k *podKind) convert(o runtime.Object) (*object, bool) {
	var p corev1.Pod
	if err := decode(o, &p); err != nil {
		return nil, false
	}
	return podObject(&p), true
}

func (k *podKind) list(ctx context.Context, selector string) ([]object, error) {
	l, err := k.pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := make([]object, len(l.Items))
	for i := range l.Items {
		var p corev1.Pod
		if err := decode(&l.Items[i], &p); err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", k.ns, l.Items[i].GetName(), err)
		}
		out[i] = *podObject(&p)
	}
	return out, nil
}

// podObject reads what Ensure needs from a pod: it answers once Running,
// Ready and given an IP; it is dead once Failed or Succeeded.
func podObject(p *corev1.Pod) *object {
	o := &object{name: p.Name, uid: p.UID, rv: p.ResourceVersion, labels: p.Labels, deleting: p.DeletionTimestamp != nil}
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		o.dead = "pod " + string(p.Status.Phase)
		return o
	}
	ready := false
	var why []string
	why = append(why, "phase "+string(p.Status.Phase))
	for _, c := range p.Status.Conditions {
		switch {
		case c.Type == corev1.PodReady:
			ready = c.Status == corev1.ConditionTrue
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse:
			why = append(why, "unscheduled: "+c.Reason+" "+c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			why = append(why, cs.Name+" "+w.Reason)
		}
	}
	_, port, err := runnerOf(&p.Spec, nil, "")
	if ready && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && err == nil {
		o.addr = hostPort(p.Status.PodIP, port)
	} else if !ready {
		why = append(why, "not Ready")
	}
	o.waiting = strings.Join(why, ", ")
	return o
}
