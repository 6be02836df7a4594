package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	agentv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// TestUpstreamNames: the values and resources objects.go spells are
// k8s.io/api's and agent-sandbox's (the field names are checked by every
// other test, whose objects are made with the upstream types).
func TestUpstreamNames(t *testing.T) {
	for got, want := range map[string]string{
		podRunning:      string(corev1.PodRunning),
		podFailed:       string(corev1.PodFailed),
		podSucceeded:    string(corev1.PodSucceeded),
		podReady:        string(corev1.PodReady),
		podScheduled:    string(corev1.PodScheduled),
		conditionTrue:   string(corev1.ConditionTrue),
		conditionFalse:  string(corev1.ConditionFalse),
		sandboxFinished: string(sandboxv1beta1.SandboxConditionFinished),
		claimExpired:    agentv1beta1.ClaimExpiredReason,
		sandboxExpired:  sandboxv1beta1.SandboxReasonExpired,
	} {
		if got != want {
			t.Errorf("objects.go spells %q where upstream has %q", got, want)
		}
	}
	if sandboxReady != string(sandboxv1beta1.SandboxConditionReady) {
		t.Errorf("sandboxReady %q, upstream %q", sandboxReady, sandboxv1beta1.SandboxConditionReady)
	}
	for _, r := range []struct {
		got  schema.GroupVersionResource
		kind schema.GroupVersionKind
	}{
		{podsResource, corev1.SchemeGroupVersion.WithKind("Pod")},
		{podTemplatesResource, corev1.SchemeGroupVersion.WithKind("PodTemplate")},
		{claimsResource, agentv1beta1.GroupVersion.WithKind("SandboxClaim")},
		{sandboxTemplatesResource, agentv1beta1.GroupVersion.WithKind("SandboxTemplate")},
		{warmPoolsResource, agentv1beta1.GroupVersion.WithKind("SandboxWarmPool")},
	} {
		if want, _ := meta.UnsafeGuessKindToResource(r.kind); r.got != want {
			t.Errorf("the resource of %v: %v, want %v", r.kind, r.got, want)
		}
	}
}
