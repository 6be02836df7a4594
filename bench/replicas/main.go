// Command replicas measures toolgate replicas sharing one Redis: read_file
// calls over streamable HTTP (stateless) from concurrent clients, against
//
//   - one replica without Redis and one with it, called directly, one call
//     at a time, in alternating rounds: the difference of their p50 is what
//     the Redis round trip adds to a call;
//   - one replica and two replicas behind a round-robin reverse proxy, both
//     with Redis, with 8 clients: throughput, p50 and p99.
//
// Every replica runs governed as in production: the default policy, its own
// hash-chained audit log. The loop guard allows identical calls without
// bound (the benchmark repeats one read on purpose; the guard still runs).
// Run it through bench/replicas/run.sh.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/internal/benchrun"
)

var (
	toolgate = flag.String("toolgate", "toolgate", "the toolgate binary")
	redisBin = flag.String("redis", "redis-server", "the redis-server binary")
	n        = flag.Int("n", 4000, "calls per concurrent run")
	seqN     = flag.Int("seq", 500, "calls per sequential round")
	rounds   = flag.Int("rounds", 4, "sequential rounds of each (alternating)")
	clients  = flag.Int("c", 8, "concurrent clients")
)

func main() {
	flag.Parse()
	work, err := os.MkdirTemp("", "toolgate-replicas-")
	check(err)
	defer os.RemoveAll(work)
	root := filepath.Join(work, "root")
	check(os.MkdirAll(root, 0o755))
	small := ""
	for i := range 20 {
		small += fmt.Sprintf("line %d of a small file read by the replicas benchmark\n", i+1)
	}
	check(os.WriteFile(filepath.Join(root, "small.txt"), []byte(small), 0o644))

	redisURL, stopRedis := startRedis(work)
	defer stopRedis()
	base := "limits:\n  loop:\n    max: 100000000\n"
	local := writePolicy(work, "local.yaml", base)
	shared := writePolicy(work, "shared.yaml", base+"state:\n  redis:\n    url: "+redisURL+"\n    prefix: \"bench:\"\n")

	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			p.Process.Signal(os.Interrupt)
			p.Wait()
		}
	}()
	replica := func(name, pol string) string {
		u, p := startReplica(work, root, name, pol)
		procs = append(procs, p)
		return u
	}
	plain := replica("plain", local)
	withRedis := replica("r1", shared)
	second := replica("r2", shared)

	fmt.Printf("toolgate replicas over streamable HTTP (stateless), read_file of a %d-byte file, %d cores\n", len(small), runtime.NumCPU())

	// Redis's share of a call: the same replica setup with and without it,
	// one call at a time, alternating rounds; the median of the rounds' p50.
	var p50Plain, p50Redis []time.Duration
	cPlain, cRedis := connect(plain), connect(withRedis)
	warm(cPlain)
	warm(cRedis)
	for range *rounds {
		p50Plain = append(p50Plain, benchrun.Percentile(sequential(cPlain, *seqN), 50))
		p50Redis = append(p50Redis, benchrun.Percentile(sequential(cRedis, *seqN), 50))
	}
	mp, mr := median(p50Plain), median(p50Redis)
	ping := redisPing(redisURL, *seqN)
	fmt.Printf("\none call at a time, %d rounds of %d calls, median of the rounds' p50:\n", *rounds, *seqN)
	fmt.Printf("  1 replica, no Redis     p50 %s\n", ms(mp))
	fmt.Printf("  1 replica, Redis        p50 %s\n", ms(mr))
	fmt.Printf("  added by Redis          %s per call (goal ≤ 0.30ms): %s\n", ms(mr-mp), verdict(mr-mp <= 300*time.Microsecond))
	fmt.Printf("  for scale: a Redis PING from Go, p50 %s (the floor of one round trip)\n", ms(ping))

	// One replica against two, behind the same round-robin proxy.
	fmt.Printf("\n%d clients, %d calls, behind a round-robin reverse proxy, Redis shared:\n", *clients, *n)
	var one, two figures
	for i := range 2 { // alternate, keep the better of two runs of each
		f1 := concurrent(proxyTo(withRedis))
		f2 := concurrent(proxyTo(withRedis, second))
		if i == 0 || f1.rate > one.rate {
			one = f1
		}
		if i == 0 || f2.rate > two.rate {
			two = f2
		}
	}
	fmt.Printf("  1 replica    %7.0f calls/s  p50 %s  p99 %s\n", one.rate, ms(one.p50), ms(one.p99))
	fmt.Printf("  2 replicas   %7.0f calls/s  p50 %s  p99 %s\n", two.rate, ms(two.p50), ms(two.p99))
	fmt.Printf("  ratio 2/1    %.2fx throughput (on %d cores the replicas, the proxy, Redis and the clients share the same CPUs)\n", two.rate/one.rate, runtime.NumCPU())
}

type figures struct {
	rate     float64
	p50, p99 time.Duration
}

// concurrent runs n calls from the clients, each its own MCP client.
func concurrent(endpoint string) figures {
	sessions := make([]*mcp.ClientSession, *clients)
	for i := range sessions {
		sessions[i] = connect(endpoint)
		defer sessions[i].Close()
		warm(sessions[i])
	}
	lat := make([]time.Duration, *n)
	var next atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for _, cs := range sessions {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= *n {
					return
				}
				lat[i] = call(cs)
			}
		})
	}
	wg.Wait()
	return figures{rate: float64(*n) / time.Since(t0).Seconds(), p50: benchrun.Percentile(lat, 50), p99: benchrun.Percentile(lat, 99)}
}

func sequential(cs *mcp.ClientSession, k int) []time.Duration {
	lat := make([]time.Duration, k)
	for i := range lat {
		lat[i] = call(cs)
	}
	return lat
}

func warm(cs *mcp.ClientSession) {
	for range 20 {
		call(cs)
	}
}

func call(cs *mcp.ClientSession) time.Duration {
	t0 := time.Now()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "small.txt"}})
	check(err)
	if res.IsError {
		check(fmt.Errorf("read_file returned an error: %v", res.Content))
	}
	return time.Since(t0)
}

func connect(endpoint string) *mcp.ClientSession {
	c := mcp.NewClient(&mcp.Implementation{Name: "replicas-bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, nil)
	check(err)
	return cs
}

// redisPing is the p50 of k PINGs: one loopback round trip to Redis.
func redisPing(u string, k int) time.Duration {
	o, err := redis.ParseURL(u)
	check(err)
	c := redis.NewClient(o)
	defer c.Close()
	ctx := context.Background()
	lat := make([]time.Duration, k)
	for i := range lat {
		t0 := time.Now()
		check(c.Ping(ctx).Err())
		lat[i] = time.Since(t0)
	}
	return benchrun.Percentile(lat, 50)
}

// proxyTo starts a round-robin reverse proxy over the replicas' /mcp
// endpoints and returns its own.
func proxyTo(endpoints ...string) string {
	var targets []*url.URL
	for _, e := range endpoints {
		u, err := url.Parse(e)
		check(err)
		targets = append(targets, u)
	}
	var turn atomic.Uint64
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			t := targets[(turn.Add(1)-1)%uint64(len(targets))]
			r.SetURL(t)
			r.Out.URL.Path = t.Path
			r.Out.Host = t.Host
		},
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0), // a client closing its stream is no news
		Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	// Each request's body is read whole before rp forwards it. Streamed,
	// it races net/http (golang/go#40747): the server drains and closes the
	// body when rp writes the answer's headers, the transport's one more
	// read past Content-Length can come after that, fail, and close the
	// connection to the replica with the answer half copied.
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}))
	return "http://" + ln.Addr().String() + "/mcp"
}

var urlRE = regexp.MustCompile(`serving MCP at (http://\S+/mcp)`)

// startReplica starts `toolgate serve --http --stateless` with its own
// audit log and returns its endpoint once it announces it.
func startReplica(work, root, name, pol string) (string, *exec.Cmd) {
	cmd := exec.Command(*toolgate, "serve", "--root", root, "--policy", pol, "--audit", filepath.Join(work, "audit-"+name+".jsonl"),
		"--http", "127.0.0.1:0", "--stateless")
	u, err := benchrun.Announced(cmd, urlRE, "toolgate serve")
	check(err)
	return u, cmd
}

// startRedis starts a redis-server without persistence on a free port.
func startRedis(work string) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(*redisBin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", work)
	check(cmd.Start())
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			check(errors.New("redis-server did not start"))
		}
	}
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port), func() { cmd.Process.Kill(); cmd.Wait() }
}

func writePolicy(work, name, src string) string {
	p := filepath.Join(work, name)
	check(os.WriteFile(p, []byte(src), 0o644))
	return p
}

func median(ds []time.Duration) time.Duration { return benchrun.Percentile(ds, 50) }

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", d.Seconds()*1000) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "replicas:", err)
		os.Exit(1)
	}
}
