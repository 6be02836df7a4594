package kube

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// What the backend reads of the objects it meets, in the field names of
// k8s.io/api/core/v1 and of agent-sandbox's API. Their own Go types are not
// linked into toolgate: importing them runs their packages' init at the
// start of every command, and their generated methods (protobuf, deep
// copies) are most of their size. Objects stay unstructured, as the
// dynamic client gives them, and are decoded into these few fields; the
// tests make every object with the upstream types, so a field or constant
// named differently here fails them.

// The resources the backend reads and writes.
var (
	podsResource             = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	podTemplatesResource     = schema.GroupVersionResource{Version: "v1", Resource: "podtemplates"}
	agentSandbox             = schema.GroupVersion{Group: "extensions.agents.x-k8s.io", Version: "v1beta1"}
	claimsResource           = agentSandbox.WithResource("sandboxclaims")
	sandboxTemplatesResource = agentSandbox.WithResource("sandboxtemplates")
	warmPoolsResource        = agentSandbox.WithResource("sandboxwarmpools")
)

// Values of core/v1's and agent-sandbox's fields that the backend reads
// (TestUpstreamNames compares them with the upstream constants).
const (
	podRunning      = "Running"        // corev1.PodRunning
	podFailed       = "Failed"         // corev1.PodFailed
	podSucceeded    = "Succeeded"      // corev1.PodSucceeded
	podReady        = "Ready"          // corev1.PodReady
	podScheduled    = "PodScheduled"   // corev1.PodScheduled
	conditionTrue   = "True"           // corev1.ConditionTrue
	conditionFalse  = "False"          // corev1.ConditionFalse
	sandboxReady    = "Ready"          // agent-sandbox's SandboxConditionReady
	sandboxFinished = "Finished"       // agent-sandbox's SandboxConditionFinished
	claimExpired    = "ClaimExpired"   // agent-sandbox's ClaimExpiredReason
	sandboxExpired  = "SandboxExpired" // agent-sandbox's SandboxReasonExpired
)

// podSpec is what is read of a PodSpec: its containers.
type podSpec struct {
	Containers []container `json:"containers"`
}

type container struct {
	Name    string          `json:"name"`
	Ports   []containerPort `json:"ports"`
	Env     []envVar        `json:"env"`
	EnvFrom []envFromSource `json:"envFrom"`
}

type containerPort struct {
	Name          string `json:"name"`
	ContainerPort int32  `json:"containerPort"`
}

type envVar struct {
	ValueFrom *struct {
		SecretKeyRef *reference `json:"secretKeyRef"`
	} `json:"valueFrom"`
}

type envFromSource struct {
	SecretRef *reference `json:"secretRef"`
}

type reference struct {
	Name string `json:"name"`
}

// pod is what is read of a Pod besides its metadata.
type pod struct {
	Spec   podSpec `json:"spec"`
	Status struct {
		Phase      string `json:"phase"`
		PodIP      string `json:"podIP"`
		Conditions []struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"conditions"`
		ContainerStatuses []struct {
			Name  string `json:"name"`
			State struct {
				Waiting *struct {
					Reason string `json:"reason"`
				} `json:"waiting"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

// claim is what is read of a SandboxClaim's status.
type claim struct {
	Status struct {
		Conditions []metav1.Condition `json:"conditions"`
		Sandbox    struct {
			PodIPs []string `json:"podIPs"`
		} `json:"sandbox"`
	} `json:"status"`
}

// decode reads an object as the dynamic client gives it (unstructured)
// into typed.
func decode(o runtime.Object, typed any) error {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("a %T where an unstructured object was expected", o)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), typed)
}

// runnerOf finds a pod spec's runner container (named RunnerContainer, or
// the only one) and its port (named RunnerPort, or the only one), and
// checks that the runner secret comes from a Secret and that the spec does
// not spell it. what names the template in errors.
func runnerOf(spec map[string]any, secret []byte, what string) (container int, port int32, err error) {
	var s podSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &s); err != nil {
		return 0, 0, fmt.Errorf("%s: its pod spec: %w", what, err)
	}
	if container, port, err = s.runner(what); err != nil {
		return 0, 0, err
	}
	if len(secret) > 0 {
		js, err := json.Marshal(spec)
		if err != nil {
			return 0, 0, err
		}
		quoted, _ := json.Marshal(string(secret))
		if strings.Contains(string(js), strings.Trim(string(quoted), `"`)) {
			return 0, 0, fmt.Errorf("%s spells the runner secret: refusing it; take it from a Secret (env valueFrom.secretKeyRef), never by value", what)
		}
	}
	return container, port, nil
}

// runner is runnerOf but for the secret's spelling.
func (s *podSpec) runner(what string) (container int, port int32, err error) {
	container = -1
	for i, c := range s.Containers {
		if c.Name == RunnerContainer || len(s.Containers) == 1 {
			container = i
		}
	}
	if container < 0 {
		return 0, 0, fmt.Errorf("%s: no runner container: name it %q (it has %d)", what, RunnerContainer, len(s.Containers))
	}
	c := s.Containers[container]
	for _, p := range c.Ports {
		if p.Name == RunnerPort || len(c.Ports) == 1 {
			port = p.ContainerPort
		}
	}
	if port == 0 {
		return 0, 0, fmt.Errorf("%s: container %q declares no runner port: add ports: [{name: %s, containerPort: 8790}] (the port of toolgate runner --listen)", what, c.Name, RunnerPort)
	}
	byRef := false
	for _, e := range c.Env {
		byRef = byRef || e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
	}
	for _, e := range c.EnvFrom {
		byRef = byRef || e.SecretRef != nil
	}
	if !byRef {
		return 0, 0, fmt.Errorf("%s: container %q takes nothing from a Secret, so toolgate runner has no secret and will not start: add env [{name: TOOLGATE_RUNNER_SECRET, valueFrom: {secretKeyRef: {name: ..., key: ...}}}]", what, c.Name)
	}
	return container, port, nil
}
