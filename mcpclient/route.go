package mcpclient

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/tool"
)

// flights are the calls in flight on one upstream, by progress token.
// A flight is kept by value: adding one makes no object of its own.
type flights struct {
	fmu sync.Mutex
	m   map[string]flight
}

// flight is one call in flight: its context (progress, the downstream
// request) and the client it is made for.
type flight struct {
	ctx  context.Context
	peer Peer
}

// add records a call until remove.
func (f *flights) add(token string, ctx context.Context, peer Peer) {
	f.fmu.Lock()
	f.m[token] = flight{ctx: ctx, peer: peer}
	f.fmu.Unlock()
}

// remove forgets a call: it is over.
func (f *flights) remove(token string) {
	f.fmu.Lock()
	delete(f.m, token)
	f.fmu.Unlock()
}

// sole returns a call in flight when every call in flight has one and the
// same client, else nil.
func (f *flights) sole() *flight {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	var one *flight
	for _, fl := range f.m {
		switch {
		case fl.peer == nil:
			return nil
		case one == nil:
			one = &fl
		case one.peer != fl.peer:
			return nil
		}
	}
	return one
}

// forwardProgress forwards an upstream progress notification to its call.
func (u *Upstream) forwardProgress(p *mcp.ProgressNotificationParams) {
	token, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	u.fmu.Lock()
	fl, ok := u.m[token]
	u.fmu.Unlock()
	if ok {
		tool.ReportProgress(fl.ctx, p.Progress, p.Total, p.Message)
	}
}

// forwardLog forwards an upstream log message to the client of the calls
// in flight, or to the gateway's log.
func (u *Upstream) forwardLog(lp *mcp.LoggingMessageParams) {
	p := *lp
	if p.Logger == "" {
		p.Logger = u.cfg.Name
	}
	if fl := u.sole(); fl != nil {
		if err := fl.peer.Log(fl.ctx, &p); err == nil {
			return
		}
	}
	u.log.Info("upstream log message", "level", p.Level, "logger", p.Logger, "data", p.Data)
}

// during returns the context of fl's call, also cancelled when ctx (the
// upstream's request) is.
func during(ctx context.Context, fl *flight) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(fl.ctx)
	stop := context.AfterFunc(ctx, cancel)
	return c, func() { stop(); cancel() }
}

// onElicit forwards an upstream's elicitation request to the client of
// the calls in flight.
func (u *Upstream) onElicit(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	fl := u.sole()
	if fl == nil {
		return nil, fmt.Errorf("toolgate gateway: %s asked for user input outside a call of one client; refused", u.cfg.Name)
	}
	c, done := during(ctx, fl)
	defer done()
	return fl.peer.Elicit(c, r.Params)
}

// onSample forwards an upstream's sampling request to the client of the
// calls in flight.
func (u *Upstream) onSample(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	fl := u.sole()
	if fl == nil {
		return nil, fmt.Errorf("toolgate gateway: %s asked for a model completion outside a call of one client; refused", u.cfg.Name)
	}
	c, done := during(ctx, fl)
	defer done()
	return fl.peer.CreateMessage(c, r.Params)
}
