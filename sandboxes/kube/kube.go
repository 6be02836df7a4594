package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/toolgate/toolgate/runner"
	"github.com/toolgate/toolgate/sandboxes"
)

// Labels every sandbox object carries.
const (
	LabelManagedBy    = "app.kubernetes.io/managed-by" // "toolgate"
	LabelComponent    = "app.kubernetes.io/component"  // "sandbox"
	LabelDeployment   = "toolgate.dev/deployment"      // Options.Deployment
	LabelPrincipal    = "toolgate.dev/principal"       // sandboxes.Key.Principal (a hash)
	LabelConversation = "toolgate.dev/conversation"    // sandboxes.Key.Conversation (a hash)
	// RunnerContainer and RunnerPort name the runner container of a
	// template with several, and its port where it declares several.
	RunnerContainer = "runner"
	RunnerPort      = "runner"
)

// DefaultReady bounds the wait for a sandbox to be Ready when
// Options.Ready is 0: a cold pod pulls its image and starts the runner.
const DefaultReady = 2 * time.Minute

// Options configure a Backend.
type Options struct {
	// Namespace holds the sandboxes and the template (required).
	Namespace string
	// Template names a PodTemplate in Namespace, or an agent-sandbox
	// SandboxTemplate there that one SandboxWarmPool references (required).
	Template string
	// Image, when set, replaces the runner container's image (Pods only:
	// a SandboxTemplate keeps its own, and setting Image with one is refused).
	Image string
	// Deployment names the gateway deployment in the objects' labels; a
	// gateway only sees, counts and deletes its own. Default "toolgate".
	Deployment string
	// Secret is the runner secret the gateway holds (required): Ensure
	// makes the sandbox on its pod's runner with runner.Token(Secret, id),
	// and a template that spells it is refused (the pod must take it from
	// a Secret).
	Secret []byte
	// HTTPClient reaches the runners on their pod IPs (nil:
	// http.DefaultClient).
	HTTPClient *http.Client
	// Ready bounds the wait for a sandbox to answer (default DefaultReady).
	Ready time.Duration
	// Client reaches the cluster (nil: made from Config(), in-cluster,
	// else KUBECONFIG): client-go's dynamic client, for pods,
	// podtemplates and agent-sandbox's resources alike (see objects.go).
	Client dynamic.Interface
}

// Backend places sandboxes on Kubernetes; it implements sandboxes.Backend.
// Its methods may be called from several goroutines.
type Backend struct {
	ns, deployment string
	ready          time.Duration
	secret         []byte
	http           *http.Client
	kind           kind
}

var _ sandboxes.KeptDeleter = (*Backend)(nil) // a sandboxes.Backend too

// A kind is the object that holds a sandbox: a Pod, or a SandboxClaim.
// resource gets, follows, lists and removes the objects of one resource
// (pods, or claims) in the namespace; read says what one of them is. The
// two kinds differ in what they create and how they read an object.
type resource struct {
	client dynamic.ResourceInterface // in the namespace
	read   func(*unstructured.Unstructured) (*object, error)
}

func (r resource) get(ctx context.Context, name string) (*object, error) {
	u, err := r.client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return notFound(nil, err)
	}
	return r.read(u)
}

func (r resource) remove(ctx context.Context, name string, uid types.UID) error {
	return r.client.Delete(ctx, name, preconditioned(uid))
}

func (r resource) watch(ctx context.Context, name, rv string) (watch.Interface, error) {
	return r.client.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: rv})
}

func (r resource) convert(o runtime.Object) (*object, bool) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil, false
	}
	obj, err := r.read(u)
	return obj, err == nil
}

func (r resource) list(ctx context.Context, selector string) ([]object, error) {
	l, err := r.client.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := make([]object, len(l.Items))
	for i := range l.Items {
		o, err := r.read(&l.Items[i])
		if err != nil {
			return nil, err
		}
		out[i] = *o
	}
	return out, nil
}

type kind interface {
	// name is the resource's name for messages ("pod", "sandboxclaim").
	name() string
	// get reads the object (nil, nil when there is none).
	get(ctx context.Context, name string) (*object, error)
	create(ctx context.Context, name string, labels map[string]string) error
	remove(ctx context.Context, name string, uid types.UID) error
	// watch follows the object from resource version rv on ("": its
	// state now, then what follows).
	watch(ctx context.Context, name, rv string) (watch.Interface, error)
	// convert turns an event's object into the object (false: not one of
	// this kind).
	convert(o runtime.Object) (*object, bool)
	list(ctx context.Context, selector string) ([]object, error)
}

// An object is what Ensure needs to know of a sandbox's object.
type object struct {
	name     string
	uid      types.UID
	rv       string // resource version
	labels   map[string]string
	deleting bool
	// dead says why the sandbox is gone for good (its pod ended, its claim
	// expired): Ensure deletes it and makes it anew.
	dead string
	// addr is "IP:PORT" once the sandbox answers.
	addr string
	// waiting says why it does not answer yet, for the timeout's message.
	waiting string
}

// serving reports whether o answers calls: it has an address and is
// neither being deleted nor gone for good.
func (o *object) serving() bool { return o.addr != "" && !o.deleting && o.dead == "" }

// New checks the options, finds the template (a PodTemplate, else a
// SandboxTemplate and its SandboxWarmPool) and checks it; ctx bounds the
// look-ups.
func New(ctx context.Context, o Options) (*Backend, error) {
	if o.Namespace == "" || o.Template == "" {
		return nil, errors.New("sandbox.kubernetes: namespace and template are required")
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("sandbox.kubernetes.namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if o.Deployment == "" {
		o.Deployment = "toolgate"
	}
	if errs := validation.IsValidLabelValue(o.Deployment); len(errs) > 0 {
		return nil, fmt.Errorf("deployment %q is not a label value: %s", o.Deployment, strings.Join(errs, "; "))
	}
	if err := runner.CheckSecret(o.Secret); err != nil {
		return nil, fmt.Errorf("sandbox backend kubernetes: the runner secret: %w", err)
	}
	if o.Ready <= 0 {
		o.Ready = DefaultReady
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Client == nil {
		cfg, err := Config()
		if err != nil {
			return nil, err
		}
		if o.Client, err = dynamic.NewForConfig(cfg); err != nil {
			return nil, fmt.Errorf("kubernetes client: %w", err)
		}
	}
	b := &Backend{ns: o.Namespace, deployment: o.Deployment, ready: o.Ready, secret: o.Secret, http: o.HTTPClient}
	pods := &podKind{templates: o.Client.Resource(podTemplatesResource).Namespace(o.Namespace),
		ns: o.Namespace, tmpl: o.Template, image: o.Image, secret: o.Secret}
	pods.resource = resource{client: o.Client.Resource(podsResource).Namespace(o.Namespace), read: pods.object}
	_, err := pods.template(ctx)
	if err == nil {
		b.kind = pods
		return b, nil
	}
	// No PodTemplate of that name, or no permission to read one (a
	// gateway given only claims): the agent-sandbox SandboxTemplate (not
	// found either when its CRDs are not installed).
	if errors.Is(err, errNoTemplate) || apierrors.IsForbidden(err) {
		claims, cerr := newClaimKind(ctx, o)
		switch {
		case cerr == nil:
			b.kind = claims
			return b, nil
		case !errors.Is(cerr, errNoTemplate):
			return nil, cerr
		}
	}
	if errors.Is(err, errNoTemplate) {
		return nil, fmt.Errorf("no PodTemplate or agent-sandbox SandboxTemplate named %q in namespace %q: create one (docs/deploy.md, section Kubernetes)", o.Template, o.Namespace)
	}
	return nil, err
}

// errNoTemplate is a template's look-up finding nothing of that name;
// errTemplate a template that cannot serve (a retry will not change it).
var (
	errNoTemplate = errors.New("no such template")
	errTemplate   = errors.New("sandbox template refused")
)

// Kind says what holds each sandbox: "pod" or "sandboxclaim".
func (b *Backend) Kind() string { return b.kind.name() }

// Ensure makes sandbox id's object unless it exists, waits, bounded by
// Options.Ready and ctx, until it is Ready, then makes the sandbox on its
// runner (PUT /sandboxes/{id}); created is the runner's answer that it
// made the workspace (201), which exactly one of racing callers gets, and
// which a pod made anew (its runner ended) gives again. See
// sandboxes.Backend.
func (b *Backend) Ensure(ctx context.Context, id string) (endpoint string, created bool, err error) {
	if err := checkID(id); err != nil {
		return "", false, err
	}
	wctx, cancel := context.WithTimeout(ctx, b.ready)
	defer cancel()
	addr, err := b.placed(ctx, wctx, id)
	if err != nil {
		return "", false, err
	}
	base := "http://" + addr + "/sandboxes/" + id
	req, err := http.NewRequestWithContext(wctx, http.MethodPut, base, nil)
	if err != nil {
		return "", false, err
	}
	req.Header.Set("Authorization", "Bearer "+runner.Token(b.secret, id))
	resp, err := b.http.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return "", false, ctx.Err()
		}
		return "", false, fmt.Errorf("%w: %s %s/%s is Ready but its runner at %s does not answer: %v", sandboxes.ErrUnavailable, b.kind.name(), b.ns, id, addr, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusCreated, http.StatusOK:
		return base + "/mcp", resp.StatusCode == http.StatusCreated, nil
	case http.StatusUnauthorized:
		return "", false, fmt.Errorf("the runner of %s %s/%s refuses the gateway's token: the gateway and the pods' Secret must hold the same runner secret", b.kind.name(), b.ns, id)
	}
	return "", false, fmt.Errorf("%w: the runner of %s %s/%s answered %s to making the sandbox", sandboxes.ErrUnavailable, b.kind.name(), b.ns, id, resp.Status)
}

// placed makes sandbox id's object unless it exists and waits until it is
// Ready, returning its runner's address (IP:PORT).
func (b *Backend) placed(ctx, wctx context.Context, id string) (string, error) {
	labels := b.labels(ctx)
	// Read it, then follow it from that version on: no event is missed,
	// and none older than what was read arrives.
	w := watch.NewEmptyWatch()
	defer func() { w.Stop() }()
	obj, err := b.kind.get(wctx, id)
	if err == nil {
		w, err = b.follow(wctx, id, obj)
	}
	for {
		if err != nil {
			return "", b.wait(ctx, wctx, id, obj, err)
		}
		switch {
		case obj == nil:
			if err = b.kind.create(wctx, id, labels); err != nil && !apierrors.IsAlreadyExists(err) { // AlreadyExists: another caller made it, wait for the same one
				if ctx.Err() == nil && wctx.Err() == nil {
					return "", b.apiError("create", id, err)
				}
				return "", b.wait(ctx, wctx, id, obj, nil)
			}
			obj, err = b.kind.get(wctx, id)
			continue
		case !b.ours(obj):
			return "", fmt.Errorf("%s %s/%s exists but is not a sandbox of deployment %q (labels %s=toolgate, %s=%s): refusing to adopt it; delete it or use another namespace", b.kind.name(), b.ns, id, b.deployment, LabelManagedBy, LabelDeployment, b.deployment)
		case obj.serving():
			return obj.addr, nil
		case obj.dead != "" && !obj.deleting:
			// Its workspace is gone: delete it, then make it anew.
			if err = b.kind.remove(wctx, id, obj.uid); err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				err = nil
				obj.deleting = true
			}
			continue
		}
		// Wait for news of it.
		select {
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error { // closed, or its version expired: read it again
				w.Stop()
				if obj, err = b.kind.get(wctx, id); err == nil {
					w, err = b.follow(wctx, id, obj)
				}
				continue
			}
			o, mine := b.kind.convert(ev.Object)
			if !mine || o.name != id {
				continue
			}
			if ev.Type == watch.Deleted {
				obj = nil
			} else {
				obj = o
			}
		case <-wctx.Done():
			return "", b.wait(ctx, wctx, id, obj, nil)
		}
	}
}

// follow watches sandbox id from the version of obj (nil: none yet).
func (b *Backend) follow(ctx context.Context, id string, obj *object) (watch.Interface, error) {
	rv := ""
	if obj != nil {
		rv = obj.rv
	}
	w, err := b.kind.watch(ctx, id, rv)
	if err != nil {
		return watch.NewEmptyWatch(), err
	}
	return w, nil
}

// wait is Ensure's error when it stops waiting: the caller's own
// cancellation as is, else (its deadline or Options.Ready passed)
// unavailable naming what was awaited.
func (b *Backend) wait(ctx, wctx context.Context, id string, obj *object, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	if err != nil && wctx.Err() == nil {
		return b.apiError("read", id, err)
	}
	state := "not made yet"
	if obj != nil {
		state = obj.waiting
		if obj.deleting {
			state = "still being deleted"
		}
	}
	return fmt.Errorf("%w: %s %s/%s was not Ready in time (%s); a later call may find it ready", sandboxes.ErrUnavailable, b.kind.name(), b.ns, id, state)
}

// apiError classifies an API server's error: a refusal that retrying will
// not change (forbidden, invalid) is said as such; the rest is unavailable.
func (b *Backend) apiError(verb, id string, err error) error {
	switch {
	case errors.Is(err, errTemplate), errors.Is(err, errNoTemplate):
		return err
	case apierrors.IsForbidden(err):
		return fmt.Errorf("cannot %s %s %s/%s: the gateway's ServiceAccount needs create, get, list, watch and delete on %ss in namespace %s (docs/deploy.md): %w", verb, b.kind.name(), b.ns, id, b.kind.name(), b.ns, err)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return fmt.Errorf("cannot %s %s %s/%s: %w", verb, b.kind.name(), b.ns, id, err)
	}
	return fmt.Errorf("%w: cannot %s %s %s/%s: %v", sandboxes.ErrUnavailable, verb, b.kind.name(), b.ns, id, err)
}

// Delete removes sandbox id (nothing when there is none); an object of
// that name that is not the deployment's is refused. See DeleteKept.
func (b *Backend) Delete(ctx context.Context, id string) error {
	_, err := b.DeleteKept(ctx, id)
	return err
}

// runnerDeleteTimeout bounds DeleteKept's call to the pod's runner: its
// answer is best-effort, and a hung runner must not hold the reaper, or a
// user's Delete, for the 30 s of any other runner request.
const runnerDeleteTimeout = 5 * time.Second

// DeleteKept removes sandbox id as Delete does, but first, when its pod
// answers, deletes the sandbox on the pod's runner (DELETE
// /sandboxes/{id}), which stops its processes and answers the process
// events it kept that no result carried (those after its last call, the
// ends of the processes it stopped): they are returned, for the reaper to
// tell (sandboxes.KeptDeleter). A runner that does not answer so (its pod
// not Ready, or hung: within runnerDeleteTimeout) does not keep the
// object: its events are lost.
func (b *Backend) DeleteKept(ctx context.Context, id string) (*runner.ProcessEvents, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	obj, err := b.kind.get(ctx, id)
	if err != nil {
		return nil, b.apiError("read", id, err)
	}
	if obj == nil {
		return nil, nil
	}
	if !b.ours(obj) {
		return nil, fmt.Errorf("%s %s/%s is not a sandbox of deployment %q: not deleting it", b.kind.name(), b.ns, id, b.deployment)
	}
	var kept *runner.ProcessEvents
	if obj.serving() {
		rctx, cancel := context.WithTimeout(ctx, runnerDeleteTimeout)
		kept, _ = sandboxes.DeleteOnRunner(rctx, b.http, b.secret, "http://"+obj.addr, id)
		cancel()
	}
	if err := b.kind.remove(ctx, id, obj.uid); err != nil && !apierrors.IsNotFound(err) {
		return kept, b.apiError("delete", id, err)
	}
	return kept, nil
}

// Count says how many of the deployment's sandboxes exist, leaving out
// those being deleted and those whose pod ended.
func (b *Backend) Count(ctx context.Context) (int, error) {
	objs, err := b.kind.list(ctx, b.selector())
	if err != nil {
		return 0, b.apiError("list", "*", err)
	}
	n := 0
	for _, o := range objs {
		if b.ours(&o) && !o.deleting && o.dead == "" {
			n++
		}
	}
	return n, nil
}

// selector selects the deployment's sandboxes.
func (b *Backend) selector() string {
	return LabelManagedBy + "=toolgate," + LabelComponent + "=sandbox," + LabelDeployment + "=" + b.deployment
}

func (b *Backend) ours(o *object) bool {
	return o.labels[LabelManagedBy] == "toolgate" && o.labels[LabelComponent] == "sandbox" && o.labels[LabelDeployment] == b.deployment
}

// labels are a new object's: the deployment's and, when the caller names
// them, the hashes of the key.
func (b *Backend) labels(ctx context.Context) map[string]string {
	l := map[string]string{LabelManagedBy: "toolgate", LabelComponent: "sandbox", LabelDeployment: b.deployment}
	if k, ok := sandboxes.KeyFrom(ctx); ok {
		for name, v := range map[string]string{LabelPrincipal: k.Principal, LabelConversation: k.Conversation} {
			if v != "" && len(validation.IsValidLabelValue(v)) == 0 {
				l[name] = v
			}
		}
	}
	return l
}

// checkID refuses an id that is not a runner's nor a DNS-1123 label (an
// object's name).
func checkID(id string) error {
	if err := runner.ValidID(id); err != nil {
		return err
	}
	if errs := validation.IsDNS1123Label(id); len(errs) > 0 {
		return fmt.Errorf("sandbox id %q cannot name a Kubernetes object: %s", id, strings.Join(errs, "; "))
	}
	return nil
}

// hostPort joins an IP and a port (brackets for IPv6).
func hostPort(ip string, port int32) string {
	return net.JoinHostPort(ip, strconv.Itoa(int(port)))
}

// preconditioned deletes only the object seen (its UID), in the background.
func preconditioned(uid types.UID) metav1.DeleteOptions {
	bg := metav1.DeletePropagationBackground
	o := metav1.DeleteOptions{PropagationPolicy: &bg}
	if uid != "" {
		o.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	return o
}

// notFound turns NotFound into (nil, nil).
func notFound(o *object, err error) (*object, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return o, err
}
