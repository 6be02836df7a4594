package kube

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config is how the gateway reaches the cluster: its pod's ServiceAccount
// when it runs in one, else the kubeconfig that kubectl would use
// ($KUBECONFIG, else ~/.kube/config, and its current context).
func Config() (*rest.Config, error) {
	cfg, err := rest.InClusterConfig()
	if err == nil {
		return cfg, nil
	}
	if !errors.Is(err, rest.ErrNotInCluster) {
		return nil, fmt.Errorf("kubernetes in-cluster config: %w", err)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("sandbox backend kubernetes: not in a cluster and no usable kubeconfig (set KUBECONFIG or run the gateway in a pod with a ServiceAccount): %w", err)
	}
	return cfg, nil
}
