package sandbox

import "sync"

// A Pod is a network namespace, with its user namespace, that several
// commands share: the commands of one owner (a conversation), so that a
// server one of them started on 127.0.0.1 is reached by the others, and
// by nobody else. Each command in a pod still has its own mount, pid, ipc
// and uts namespaces, cgroup, limits, Landlock and seccomp filter, as
// without a pod: a pod shares a loopback, nothing more. Only loopback
// exists in it (and, with Spec.Network, the egress proxy: each command
// reaches it at a port of its own, named in its proxy variables), and TCP
// on that loopback is allowed.
//
// The zero value is ready to use (set Spec.Pod to it); Close ends it. A
// pod is made when its first command runs, by a small process living in
// its namespaces that starts its commands (see starter): the pod ends
// when that process and every command are gone.
type Pod struct {
	mu     sync.Mutex
	closed bool
	ports  map[int]bool // proxy ports in use by its commands
	impl   podImpl
}

// podPorts is how many commands of one pod may have a proxy network at
// once (each has a loopback port of its own from ProxyPort on).
const podPorts = 64

// takePort returns a free proxy port of the pod, or 0 when all are taken.
func (p *Pod) takePort() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ports == nil {
		p.ports = map[int]bool{}
	}
	for port := ProxyPort; port < ProxyPort+podPorts; port++ {
		if !p.ports[port] {
			p.ports[port] = true
			return port
		}
	}
	return 0
}

// givePort gives a port taken by takePort back.
func (p *Pod) givePort(port int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.ports, port)
}
