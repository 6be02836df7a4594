package kube

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	agentv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// The tests' cluster: client-go's fake dynamic client as the API server
// (knowing core/v1's kinds and agent-sandbox's, from their own API types),
// and a kubelet (or claim controller) of the test's own
// that starts a REAL `toolgate runner` process on loopback for each pod,
// with the pod's own arguments and the Secret its env references, and
// reports the pod Ready with an IP. Pod IPs are loopback addresses
// (127.0.9.N), and the tests' HTTP client maps each pod's IP:port to its
// runner's real address, refusing any address it did not map: nothing
// leaves the machine.

// bin is the toolgate binary (toolgate-sandbox beside it) built once.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolgate-kube-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "toolgate")
	for out, pkg := range map[string]string{bin: "../../cmd/toolgate", filepath.Join(dir, "toolgate-sandbox"): "../../cmd/toolgate-sandbox"} {
		if log, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, log)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	testNS     = "toolgate-sandboxes"
	testSecret = "runner-secret-kube-7c1e94a2d05b"
	secretEnv  = "TOOLGATE_RUNNER_SECRET"
	runnerArgs = "runner --listen 0.0.0.0:8790 --dir /sandboxes --token-env " + secretEnv
)

// runnerSpec is the pod spec of the tests' templates: toolgate runner
// taking its secret from Secret toolgate-runner.
func runnerSpec() corev1.PodSpec {
	return corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:  RunnerContainer,
			Image: "registry.example.com/toolgate:template",
			Args:  strings.Fields(runnerArgs),
			Env: []corev1.EnvVar{{Name: secretEnv, ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "toolgate-runner"}, Key: "secret"}}}},
			Ports: []corev1.ContainerPort{{Name: RunnerPort, ContainerPort: 8790}},
		}},
	}
}

// newCluster is a fake API server holding objs (k8s.io/api or
// agent-sandbox objects).
func newCluster(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := agentv1beta1.AddToScheme(s); err != nil {
		panic(err)
	}
	return dynamicfake.NewSimpleDynamicClient(s, objs...)
}

// getAs reads object name of resource r in the tests' namespace as a T.
func getAs[T any](ctx context.Context, c dynamic.Interface, r schema.GroupVersionResource, name string) (*T, error) {
	u, err := c.Resource(r).Namespace(testNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var t T
	if err := decode(u, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// updateStatus writes o (read by getAs, so it names its kind) with its
// status, as a kubelet or controller does.
func updateStatus(ctx context.Context, c dynamic.Interface, r schema.GroupVersionResource, o runtime.Object) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return err
	}
	_, err = c.Resource(r).Namespace(testNS).UpdateStatus(ctx, &unstructured.Unstructured{Object: m}, metav1.UpdateOptions{})
	return err
}

// specMap is a pod spec as the dynamic client gives it.
func specMap(spec *corev1.PodSpec) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(spec)
	if err != nil {
		panic(err)
	}
	return m
}

func runnerSecretObject() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "toolgate-runner", Namespace: testNS},
		Data: map[string][]byte{"secret": []byte(testSecret)}}
}

// network maps pod addresses (IP:port) to the real loopback address of
// the runner serving that pod.
type network struct {
	mu    sync.Mutex
	addrs map[string]string
	next  int
}

func newNetwork() *network { return &network{addrs: map[string]string{}} }

// ip hands out the next pod IP, a loopback address.
func (n *network) ip() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.next++
	return fmt.Sprintf("127.0.9.%d", n.next)
}

func (n *network) set(podAddr, real string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if real == "" {
		delete(n.addrs, podAddr)
	} else {
		n.addrs[podAddr] = real
	}
}

// client is an HTTP client that reaches pods through the map, refusing
// every address it did not map (the backend's).
func (n *network) client() *http.Client { return &http.Client{Transport: n.transport()} }

// sandbox is the client with sandbox id's bearer token added (the
// gateway's MCP sessions).
func (n *network) sandbox(id string) *http.Client {
	return &http.Client{Transport: bearer{id: id, next: n.transport()}}
}

func (n *network) transport() *http.Transport {
	return &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.mu.Lock()
		real, ok := n.addrs[addr]
		n.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("no pod answers at %s", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, real)
	}}
}

var announced = regexp.MustCompile(`runner serving MCP at http://(\S+)/sandboxes/`)

// startRunner runs a pod's runner container as a process: its own args
// with --listen on loopback and --dir a new folder (a new pod starts
// empty), its env with each secretKeyRef read from the API server. It
// returns the runner's real address and a function ending it.
func startRunner(ctx context.Context, c dynamic.Interface, spec *corev1.PodSpec, dir string) (string, func(), error) {
	ci, _, err := runnerOf(specMap(spec), nil, "pod")
	if err != nil {
		return "", nil, err
	}
	ctr := spec.Containers[ci]
	args := append([]string(nil), ctr.Args...)
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--listen":
			args[i+1] = "127.0.0.1:0"
		case "--dir":
			args[i+1] = dir
		}
	}
	env := os.Environ()
	for _, e := range ctr.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			s, err := getAs[corev1.Secret](ctx, c, schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, e.ValueFrom.SecretKeyRef.Name)
			if err != nil {
				return "", nil, err
			}
			v = string(s.Data[e.ValueFrom.SecretKeyRef.Key])
		}
		env = append(env, e.Name+"="+v)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
		})
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := announced.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case addr := <-found:
		return addr, stop, nil
	case <-time.After(60 * time.Second):
		stop()
		return "", nil, fmt.Errorf("toolgate runner %v did not announce its address", args)
	}
}

// kubelet runs the pods of the fake API server: for each new pod a real
// runner, then the pod Running, Ready, with a loopback IP; a deleted pod's
// runner ends. It runs until the test ends.
type kubelet struct {
	t   *testing.T
	c   dynamic.Interface
	net *network
	mu  sync.Mutex
	run map[string]func() // pod name → stop its runner
}

func startKubelet(t *testing.T, c dynamic.Interface, n *network) *kubelet {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Resource(podsResource).Namespace(testNS).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := &kubelet{t: t, c: c, net: n, run: map[string]func(){}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range w.ResultChan() {
			p := new(corev1.Pod)
			if err := decode(ev.Object, p); err != nil {
				continue
			}
			switch {
			case ev.Type == watch.Added && p.Status.Phase == "":
				wg.Add(1)
				go func() { defer wg.Done(); k.start(ctx, p) }()
			case ev.Type == watch.Deleted:
				stop := k.take(p.Name)
				wg.Add(1)
				go func() { defer wg.Done(); stop() }() // (its runner may wait for sessions to end)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		wg.Wait()
		k.mu.Lock()
		defer k.mu.Unlock()
		for _, stop := range k.run {
			stop()
		}
	})
	return k
}

func (k *kubelet) start(ctx context.Context, p *corev1.Pod) {
	addr, stop, err := startRunner(ctx, k.c, &p.Spec, k.t.TempDir())
	if err != nil {
		k.t.Errorf("pod %s: %v", p.Name, err)
		return
	}
	ip := k.ip()
	_, port, _ := runnerOf(specMap(&p.Spec), nil, "")
	k.mu.Lock()
	k.run[p.Name] = func() { stop(); k.net.set(hostPort(ip, port), "") }
	k.mu.Unlock()
	k.net.set(hostPort(ip, port), addr)
	cur, err := getAs[corev1.Pod](ctx, k.c, podsResource, p.Name)
	if err != nil || cur.Status.Phase != "" {
		return // deleted meanwhile
	}
	cur.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := updateStatus(ctx, k.c, podsResource, cur); err != nil && ctx.Err() == nil {
		k.t.Errorf("pod %s status: %v", p.Name, err)
	}
}

func (k *kubelet) ip() string { return k.net.ip() }

// take removes a pod's runner from those running and returns what stops it.
func (k *kubelet) take(name string) func() {
	k.mu.Lock()
	defer k.mu.Unlock()
	stop := k.run[name]
	delete(k.run, name)
	if stop == nil {
		return func() {}
	}
	return stop
}

// runners says how many runner processes run.
func (k *kubelet) runners() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.run)
}
