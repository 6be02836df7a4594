package kube

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/sandboxes"
)

// TestWire: the production client (Config from a kubeconfig, client-go's
// dynamic client) on the wire, against an HTTP server playing the API
// server's part: New reads the PodTemplate at its path with the
// kubeconfig's token; Count lists pods with the deployment's label
// selector and decodes a PodList; Ensure looks the pod up, watches it by
// name and POSTs a Pod naming its apiVersion, kind, name and labels, the
// template's container and secret reference kept; with no kubelet the pod
// never gets Ready and Ensure is unavailable.
func TestWire(t *testing.T) {
	const base = "/api/v1/namespaces/" + testNS
	var (
		mu       sync.Mutex
		created  map[string]any
		watched  string
		selector string
	)
	reply := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	notFound := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t" {
			reply(w, http.StatusUnauthorized, metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnauthorized})
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch key := r.Method + " " + r.URL.Path; {
		case key == "GET "+base+"/podtemplates/toolgate-sandbox":
			pt := podTemplate(runnerSpec())
			pt.TypeMeta = metav1.TypeMeta{Kind: "PodTemplate", APIVersion: "v1"}
			reply(w, http.StatusOK, pt)
		case key == "GET "+base+"/pods" && r.URL.Query().Get("watch") == "true":
			watched = r.URL.Query().Get("fieldSelector")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			mu.Unlock()
			<-r.Context().Done() // no news until the client gives up
			mu.Lock()
		case key == "GET "+base+"/pods":
			selector = r.URL.Query().Get("labelSelector")
			ours := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Name: "sb-running", Namespace: testNS, Labels: map[string]string{LabelManagedBy: "toolgate", LabelComponent: "sandbox", LabelDeployment: "toolgate"}},
				Spec:       runnerSpec(), Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			reply(w, http.StatusOK, corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{*ours}})
		case key == "GET "+base+"/pods/sb-wire":
			if created == nil {
				reply(w, http.StatusNotFound, notFound)
				return
			}
			reply(w, http.StatusOK, created)
		case key == "POST "+base+"/pods":
			if err := json.NewDecoder(r.Body).Decode(&created); err != nil {
				t.Errorf("the pod POSTed: %v", err)
			}
			reply(w, http.StatusCreated, created)
		default:
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			reply(w, http.StatusNotFound, notFound)
		}
	}))
	defer srv.Close()

	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+srv.URL+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", kc)
	ctx := context.Background()
	b, err := New(ctx, Options{Namespace: testNS, Template: "toolgate-sandbox", Image: "registry.example.com/toolgate-runner:2", Secret: []byte(testSecret), Ready: time.Second})
	if err != nil || b.Kind() != "pod" {
		t.Fatalf("New over the wire = %v; want the pod backend", err)
	}
	if n, err := b.Count(ctx); err != nil || n != 1 {
		t.Errorf("Count over the wire = %d, %v; want 1", n, err)
	}
	if _, _, err := b.Ensure(ctx, "sb-wire"); !errors.Is(err, sandboxes.ErrUnavailable) {
		t.Errorf("Ensure with no kubelet = %v; want unavailable", err)
	}

	mu.Lock()
	defer mu.Unlock()
	if selector != b.selector() {
		t.Errorf("Count's label selector %q; want %q", selector, b.selector())
	}
	if watched != "metadata.name=sb-wire" {
		t.Errorf("Ensure watched %q; want the pod by name", watched)
	}
	js, _ := json.Marshal(created)
	var p corev1.Pod
	if err := json.Unmarshal(js, &p); err != nil {
		t.Fatal(err)
	}
	ref := p.Spec.Containers[0].Env[0].ValueFrom
	if p.APIVersion != "v1" || p.Kind != "Pod" || p.Name != "sb-wire" || p.Namespace != testNS || p.Labels[LabelDeployment] != "toolgate" || p.Labels["team"] != "blue" ||
		p.Spec.Containers[0].Image != "registry.example.com/toolgate-runner:2" || ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "toolgate-runner" ||
		p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
		t.Errorf("the pod POSTed: %s", js)
	}
}
