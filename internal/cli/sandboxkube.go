package cli

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/sandboxes"
	"github.com/toolgate/toolgate/sandboxes/kube"
)

// kubeBackend is the Backend of `sandbox: {backend: kubernetes}`: Pods (or
// agent-sandbox claims) from the block's template in its namespace,
// reached through the gateway pod's ServiceAccount, else the kubeconfig
// kubectl would use ($KUBECONFIG). The template is read and checked now,
// so a gateway that cannot place sandboxes does not start.
func kubeBackend(ctx context.Context, k *policy.SandboxKubernetes, secret []byte) (sandboxes.Backend, error) {
	if k == nil || k.Namespace == "" || k.Template == "" {
		return nil, usageErr("sandbox.backend kubernetes needs sandbox.kubernetes.namespace and .template (a PodTemplate, or an agent-sandbox SandboxTemplate, in that namespace; docs/deploy.md)")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := kube.New(ctx, kube.Options{Namespace: k.Namespace, Template: k.Template, Image: k.Image, Secret: secret})
	if err != nil {
		return nil, usageErr("sandbox.kubernetes: %v", err)
	}
	return b, nil
}
