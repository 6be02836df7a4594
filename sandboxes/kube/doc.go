// Package kube places a conversation's sandbox on Kubernetes (issue 28,
// `sandbox: {backend: kubernetes}`): a sandboxes.Backend that makes one Pod
// running `toolgate runner` per sandbox from a PodTemplate, or, where the
// agent-sandbox CRDs (extensions.agents.x-k8s.io) are installed and the
// policy's template names a SandboxTemplate, one SandboxClaim per sandbox
// (its SandboxWarmPool's warm pods then apply).
//
// Each object is named by the sandbox id (a DNS-1123 label), so creation is
// idempotent: racing gateways all create it, one succeeds and the others
// meet AlreadyExists and wait for the same object. Objects carry labels
// naming the gateway deployment and the hashes of the key's principal and
// conversation (sandboxes.KeyFrom); an object of that name without the
// deployment's labels is refused, never adopted. Ensure waits, bounded by
// Options.Ready, until the pod is Ready with an IP, then makes the sandbox
// on its runner (PUT /sandboxes/ID with runner.Token) and answers
// http://IP:PORT/sandboxes/ID/mcp, PORT being the runner container's port
// (the sandbox's MCP endpoint, from which the gateway derives the one it
// calls: …/sandboxes/ID/call).
// Whether it created the sandbox is the runner's answer (it made the
// workspace): exactly one of racing callers hears so. Past the bound, or
// when the API server or the runner cannot be reached, the error wraps
// sandboxes.ErrUnavailable. A pod that ended (phase Failed or Succeeded)
// or an expired claim is deleted and made anew, with a new workspace.
//
// The runner's secret reaches the pod by reference only: the template's
// runner container must take it from a Secret (env valueFrom.secretKeyRef
// or envFrom.secretRef), and a template that spells the secret's value
// anywhere is refused. What the gateway's ServiceAccount needs in the
// namespace is exactly create, get, list, watch and delete on pods and get
// on the PodTemplate; or, for claims, the same verbs on sandboxclaims, get
// on the SandboxTemplate and list on sandboxwarmpools (docs/deploy.md).
//
// The cluster is reached with client-go's dynamic client and the objects
// stay unstructured, read through the few fields the backend needs
// (objects.go): a typed clientset, or k8s.io/api's types, would link and
// initialise their API groups at the start of every toolgate command (the
// binary was 91 MB and `toolgate version` 31 M instructions with the typed
// clientsets, 60 MB and 9 M without; 53 MB and 6.3 M with no backend).
package kube
