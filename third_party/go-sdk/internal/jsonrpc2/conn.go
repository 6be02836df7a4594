// Copyright 2018 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

package jsonrpc2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/internal/mcpgodebug"
)

// nomethodnotfoundcodeinerror is a compatibility parameter that restores the
// pre-fix behavior of [processResult], where wrapped [ErrNotHandled] or
// [ErrMethodNotFound] errors returned by request handlers were not
// recognized as "method not found" signals. The original switch statement
// compared sentinel errors with ==, which never matched errors returned via
// fmt.Errorf("%w: ...", ErrNotHandled, ...) — including the ones produced
// by checkRequest. As a result the wire error response carried code 0
// instead of code -32601. The fix uses errors.Is to recognize wrapped
// sentinels and append the method name to the message.
//
// To restore the previous behavior, set MCPGODEBUG=nomethodnotfoundcodeinerror=1.
// This option will be removed in a future SDK version.
// See the documentation for the mcpgodebug package for instructions on how
// to use it.
var nomethodnotfoundcodeinerror = mcpgodebug.Value("nomethodnotfoundcodeinerror")

// Connection manages the jsonrpc2 protocol, connecting responses back to their
// calls. Connection is bidirectional; it does not have a designated server or
// client end.
//
// Note that the word 'Connection' is overloaded: the mcp.Connection represents
// the bidirectional stream of messages between client an server. The
// jsonrpc2.Connection layers RPC logic on top of that stream, dispatching RPC
// handlers, and correlating requests with responses from the peer.
//
// Some of the complexity of the Connection type is grown out of its usage in
// gopls: it could probably be simplified based on our usage in MCP.
type Connection struct {
	seq int64 // must only be accessed using atomic operations

	stateMu sync.Mutex
	state   inFlightState // accessed only in updateInFlight
	done    chan struct{} // closed (under stateMu) when state.closed is true and all goroutines have completed

	// PATCH(toolgate): patch 37. doneSet is set, under stateMu, as done
	// is closed: updateInFlight reads it instead of trying to receive from
	// done (a runtime call, ~60 instructions, 11 times a relayed call).
	doneSet bool

	// PATCH(toolgate): patch 14. wake hands the handler queue to the
	// goroutine parked in handleAsync (state.parked): see park.
	wake chan struct{}

	writer  Writer
	handler Handler

	// PATCH(toolgate): patch 31. freeing is writer when it is a
	// FreeingWriter, else nil.
	freeing FreeingWriter

	onInternalError func(error)
	onDone          func()
}

// inFlightState records the state of the incoming and outgoing calls on a
// Connection.
type inFlightState struct {
	connClosing bool  // true when the Connection's Close method has been called
	reading     bool  // true while the readIncoming goroutine is running
	readErr     error // non-nil when the readIncoming goroutine exits (typically io.EOF)
	writeErr    error // non-nil if a call to the Writer has failed with a non-canceled Context

	// closer shuts down and cleans up the Reader and Writer state, ideally
	// interrupting any Read or Write call that is currently blocked. It is closed
	// when the state is idle and one of: connClosing is true, readErr is non-nil,
	// or writeErr is non-nil.
	//
	// After the closer has been invoked, the closer field is set to nil
	// and the closeErr field is simultaneously set to its result.
	closer   io.Closer
	closeErr error // error returned from closer.Close

	// PATCH(toolgate): patch 37. outgoingCalls is keyed by the int64 of
	// the call's ID (Call makes every one an Int64ID): a map of int64 keys
	// hashes and compares without the interface's type dispatch. A
	// response's ID that is not an int64 matched no key of map[ID] either.
	outgoingCalls         map[int64]*AsyncCall // calls only
	outgoingNotifications int                  // # of notifications awaiting "write"

	// incoming stores the total number of incoming calls and notifications
	// that have not yet written or processed a result.
	incoming int

	incomingByID map[ID]*incomingRequest // calls only

	// handlerQueue stores the backlog of calls and notifications that were not
	// already handled by a preempter.
	// The queue does not include the request currently being handled (if any).
	handlerQueue   []*incomingRequest
	handlerRunning bool

	// PATCH(toolgate): patch 14. parked counts the goroutines that ran the
	// handler queue and wait in park to run it again (they do no work:
	// handlerRunning is not theirs), at most maxParked.
	parked int
}

// updateInFlight locks the state of the connection's in-flight requests, allows
// f to mutate that state, and closes the connection if it is idle and either
// is closing or has a read or write error.
func (c *Connection) updateInFlight(f func(*inFlightState)) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()

	s := &c.state

	f(s)

	if c.doneSet { // PATCH(toolgate): patch 37 (was a select on c.done)
		// The connection was already completely done at the start of this call to
		// updateInFlight, so it must remain so. (The call to f should have noticed
		// that and avoided making any updates that would cause the state to be
		// non-idle.)
		if !s.idle() {
			panic("jsonrpc2: updateInFlight transitioned to non-idle when already done")
		}
		return
	}

	if s.idle() && s.shuttingDown(ErrUnknown) != nil {
		if s.closer != nil {
			s.closeErr = s.closer.Close()
			s.closer = nil // prevent duplicate Close calls
		}
		if s.reading {
			// The readIncoming goroutine is still running. Our call to Close should
			// cause it to exit soon, at which point it will make another call to
			// updateInFlight, set s.reading to false, and mark the Connection done.
		} else {
			// The readIncoming goroutine has exited, or never started to begin with.
			// Since everything else is idle, we're completely done.
			if c.onDone != nil {
				c.onDone()
			}
			c.doneSet = true // PATCH(toolgate): patch 37
			close(c.done)
		}
	}
}

// idle reports whether the connection is in a state with no pending calls or
// notifications.
//
// If idle returns true, the readIncoming goroutine may still be running,
// but no other goroutines are doing work on behalf of the connection.
func (s *inFlightState) idle() bool {
	return len(s.outgoingCalls) == 0 && s.outgoingNotifications == 0 && s.incoming == 0 && !s.handlerRunning
}

// shuttingDown reports whether the connection is in a state that should
// disallow new (incoming and outgoing) calls. It returns either nil or
// an error that is or wraps the provided errClosing.
func (s *inFlightState) shuttingDown(errClosing error) error {
	if s.connClosing {
		// If Close has been called explicitly, it doesn't matter what state the
		// Reader and Writer are in: we shouldn't be starting new work because the
		// caller told us not to start new work.
		return errClosing
	}
	if s.readErr != nil {
		// If the read side of the connection is broken, we cannot read new call
		// requests, and cannot read responses to our outgoing calls.
		return fmt.Errorf("%w: %w", errClosing, s.readErr)
	}
	if s.writeErr != nil {
		// If the write side of the connection is broken, we cannot write responses
		// for incoming calls, and cannot write requests for outgoing calls.
		return fmt.Errorf("%w: %w", errClosing, s.writeErr)
	}
	return nil
}

// incomingRequest is used to track an incoming request as it is being handled
type incomingRequest struct {
	*Request // the request being processed
	ctx      context.Context
	cancel   context.CancelCauseFunc

	// PATCH(toolgate): patch 37. rel is the request's releaser (see
	// handleAsync), allocated with it.
	rel releaser

	// PATCH(toolgate): patch 40. resp is the request's response
	// (respond's), allocated with it.
	resp Response
}

// Reader abstracts the transport mechanics from the JSON RPC protocol.
// A Connection reads messages from the reader it was provided on construction,
// and assumes that each call to Read fully transfers a single message,
// or returns an error.
//
// A reader is not safe for concurrent use, it is expected it will be used by
// a single Connection in a safe manner.
type Reader interface {
	// Read gets the next message from the stream.
	Read(context.Context) (Message, error)
}

// Writer abstracts the transport mechanics from the JSON RPC protocol.
// A Connection writes messages using the writer it was provided on construction,
// and assumes that each call to Write fully transfers a single message,
// or returns an error.
//
// A writer must be safe for concurrent use, as writes may occur concurrently
// in practice: libraries may make calls or respond to requests asynchronously.
type Writer interface {
	// Write sends a message to the stream.
	Write(context.Context, Message) error
}

// PATCH(toolgate): patch 31. A FreeingWriter is a Writer that may give back
// for reuse what a message it writes holds (a response's frame: FrameOf)
// when told that nothing holds the message once WriteFree returns.
// WriteFree writes as Write does. A Connection calls WriteFree instead of
// Write when its own Writer is one: it is the last to hold the messages it
// writes. A Writer that wraps another (one that logs what it writes, say)
// calls the other's Write, never its WriteFree, and is itself no
// FreeingWriter unless it, too, keeps nothing of the message after: a
// frame is then only ever given back where the whole chain of Writes has
// returned.
type FreeingWriter interface {
	Writer
	WriteFree(context.Context, Message) error
}

// A ConnectionConfig configures a bidirectional jsonrpc2 connection.
type ConnectionConfig struct {
	Reader          Reader                    // required
	Writer          Writer                    // required
	Closer          io.Closer                 // required
	Preempter       Preempter                 // optional
	Bind            func(*Connection) Handler // required
	OnDone          func()                    // optional
	OnInternalError func(error)               // optional

	// PropagateCancellation controls whether cancellation of the context
	// passed to [NewConnection] is observable by request handlers.
	//
	// By default (false), the connection wraps that context (see [notDone])
	// so handlers' Done channels do not fire when the connection's root
	// context is cancelled. Cancellation of an in-flight handler is then
	// expected to flow only through the jsonrpc2 layer's explicit channels
	// (the [Preempter] reacting to the peer's cancel notification, or a
	// transport read/write failure cancelling every in-flight request).
	//
	// Set this true when cancellation of the connection's context is itself
	// a meaningful signal that handlers should react to (for example, when
	// the connection is tied to a carrier that owns it and whose end means
	// the request is cancelled).
	PropagateCancellation bool // optional
}

// NewConnection creates a new [Connection] object and starts processing
// incoming messages.
func NewConnection(ctx context.Context, cfg ConnectionConfig) *Connection {
	if !cfg.PropagateCancellation {
		ctx = notDone{ctx}
	}

	c := &Connection{
		state:           inFlightState{closer: cfg.Closer},
		done:            make(chan struct{}),
		wake:            make(chan struct{}),
		writer:          cfg.Writer,
		onDone:          cfg.OnDone,
		onInternalError: cfg.OnInternalError,
	}
	c.freeing, _ = cfg.Writer.(FreeingWriter) // PATCH(toolgate): patch 31
	c.handler = cfg.Bind(c)
	c.start(ctx, cfg.Reader, cfg.Preempter)
	return c
}

func (c *Connection) start(ctx context.Context, reader Reader, preempter Preempter) {
	c.updateInFlight(func(s *inFlightState) {
		select {
		case <-c.done:
			// The connection was already closed; don't start a goroutine to read it.
			return
		default:
		}

		// The goroutine started here will continue until the underlying stream is closed.
		s.reading = true
		go c.readIncoming(ctx, reader, preempter)
	})
}

// Notify invokes the target method but does not wait for a response.
// The params will be marshaled to JSON before sending over the wire, and will
// be handed to the method invoked.
func (c *Connection) Notify(ctx context.Context, method string, params any) (err error) {
	attempted := false

	defer func() {
		if attempted {
			c.updateInFlight(func(s *inFlightState) {
				s.outgoingNotifications--
			})
		}
	}()

	c.updateInFlight(func(s *inFlightState) {
		// If the connection is shutting down, allow outgoing notifications only if
		// there is at least one call still in flight. The number of calls in flight
		// cannot increase once shutdown begins, and allowing outgoing notifications
		// may permit notifications that will cancel in-flight calls.
		if len(s.outgoingCalls) == 0 && len(s.incomingByID) == 0 {
			err = s.shuttingDown(ErrClientClosing)
			if err != nil {
				return
			}
		}
		s.outgoingNotifications++
		attempted = true
	})
	if err != nil {
		return err
	}

	notify, err := NewNotification(method, params)
	if err != nil {
		return fmt.Errorf("marshaling notify parameters: %v", err)
	}

	return c.write(ctx, notify)
}

// Call invokes the target method and returns an object that can be used to await the response.
// The params will be marshaled to JSON before sending over the wire, and will
// be handed to the method invoked.
// You do not have to wait for the response, it can just be ignored if not needed.
// If sending the call failed, the response will be ready and have the error in it.
func (c *Connection) Call(ctx context.Context, method string, params any) *AsyncCall {
	return c.call(ctx, method, params, nil, nil)
}

// PATCH(toolgate): patch 38. CallCompact is Call(ctx, method,
// params) of params that are not empty, without params going into an
// interface (an allocation of its own).
func (c *Connection) CallCompact(ctx context.Context, method string, params Compact) *AsyncCall {
	if len(params) == 0 {
		return c.call(ctx, method, params, nil, nil)
	}
	return c.call(ctx, method, nil, params, nil)
}

// PATCH(toolgate): patch 39. CallFramed is CallCompact(ctx, method,
// framed[CallRoom(method):]): params laid in a buffer after room for the
// request's head, with room for two more bytes after them (a closing brace
// and a stream's newline). encodeFast writes the request around them in
// place (the head in the room before, the brace after), as patch 22 writes
// a Framed result, instead of copying them into a new slice. The caller
// must not change the buffer or use it for anything else after the call.
// Without that room the params are sent as CallCompact sends them.
func (c *Connection) CallFramed(ctx context.Context, method string, framed []byte) *AsyncCall {
	room := CallRoom(method)
	if len(framed) <= room || cap(framed)-len(framed) < 2 {
		return c.CallCompact(ctx, method, Compact(framed[min(room, len(framed)):]))
	}
	return c.call(ctx, method, nil, Compact(framed[room:]), framed)
}

// PATCH(toolgate): patch 39. CallRoom is the room CallFramed's buffer
// leaves before the params: the longest head encodeFast writes in front of
// them (an integer id, method as it is between quotes).
func CallRoom(method string) int {
	return len(`{"jsonrpc":"2.0","id":-9223372036854775808,"method":"","params":`) + len(method)
}

// call is Call; with compact not empty, of Compact(compact) (params unused),
// laid at the end of frame when frame is not nil (CallFramed).
func (c *Connection) call(ctx context.Context, method string, params any, compact Compact, frame []byte) *AsyncCall {
	// Generate a new request identifier.
	n := atomic.AddInt64(&c.seq, 1) // PATCH(toolgate): patch 37, outgoingCalls' key

	// PATCH(toolgate): patch 40. The call, its ID's value (int64IDAt) and,
	// of Compact params, its request are allocated together.
	var (
		ac   *AsyncCall
		call *Request
		err  error
	)
	if len(compact) > 0 { // PATCH(toolgate): patch 38
		cc := &compactCall{num: n}
		ac = &cc.ac
		ac.id = int64IDAt(&cc.num)
		call = cc.req.fill(ac.id, method, compact, frame)
	} else {
		nc := &numCall{num: n}
		ac = &nc.ac
		ac.id = int64IDAt(&nc.num)
		call, err = NewCall(ac.id, method, params)
	}
	id := ac.id
	ac.ready = make(chan struct{})
	// When this method returns, either ac is retired, or the request has been
	// written successfully and the call is awaiting a response (to be provided by
	// the readIncoming goroutine).

	if err != nil {
		ac.retire(&Response{ID: id, Error: fmt.Errorf("marshaling call parameters: %w", err)})
		return ac
	}

	c.updateInFlight(func(s *inFlightState) {
		err = s.shuttingDown(ErrClientClosing)
		if err != nil {
			return
		}
		if s.outgoingCalls == nil {
			s.outgoingCalls = make(map[int64]*AsyncCall)
		}
		s.outgoingCalls[n] = ac
	})
	if err != nil {
		ac.retire(&Response{ID: id, Error: err})
		return ac
	}

	// PATCH(toolgate): patch 37. write's check (shuttingDown) passed in the
	// update that registered the call, so the call is sent without another:
	// shuttingDown is nil or not whatever error it is given.
	if err := c.send(ctx, call, nil); err != nil {
		// Sending failed. We will never get a response, so deliver a fake one if it
		// wasn't already retired by the connection breaking.
		c.Retire(ac, err)
	}
	return ac
}

// PATCH(toolgate): patch 40. numCall is an AsyncCall and its ID's value;
// compactCall also its request (markedRequest.fill's), which the call then
// holds as long as it is held (the request's params are the caller's,
// whose buffer is not reused: CallFramed).
type numCall struct {
	ac  AsyncCall
	num int64
}

type compactCall struct {
	ac  AsyncCall
	num int64
	req markedRequest
}

// Retire stops tracking the call, and reports err as its terminal error.
//
// Retire is safe to call multiple times: if the call is already no longer
// tracked, Retire is a no op.
func (c *Connection) Retire(ac *AsyncCall, err error) {
	c.updateInFlight(func(s *inFlightState) {
		if n, ok := ac.id.value.(int64); ok && s.outgoingCalls[n] == ac { // PATCH(toolgate): patch 37
			delete(s.outgoingCalls, n)
			ac.retire(&Response{ID: ac.id, Error: err})
		} else {
			// ac was already retired elsewhere.
		}
	})
}

// Async, signals that the current jsonrpc2 request may be handled
// asynchronously to subsequent requests, when ctx is the request context.
//
// Async must be called at most once on each request's context (and its
// descendants).
func Async(ctx context.Context) {
	if r, ok := ctx.Value(asyncKey).(*releaser); ok {
		r.release(false)
	}
}

type asyncKeyType struct{}

var asyncKey = asyncKeyType{}

// A releaser implements concurrency safe 'releasing' of async requests. (A
// request is released when it is allowed to run concurrent with other
// requests, via a call to [Async].)
//
// PATCH(toolgate): a request is handled on the goroutine that runs the
// handler queue (handleAsync), not on a goroutine of its own; releasing it
// hands the rest of the queue on to a new goroutine (when there is a rest).
type releaser struct {
	mu       sync.Mutex
	conn     *Connection
	released bool
}

// release lets the queue go on while the request is still being handled. If
// soft is set, multiple calls to release are allowed.
func (r *releaser) release(soft bool) {
	r.mu.Lock()
	defer r.mu.Unlock()

	if r.released {
		if !soft {
			panic("jsonrpc2.Async called multiple times")
		}
		return
	}
	r.released = true
	var h handoff // PATCH(toolgate): patch 37 (was a func)
	r.conn.updateInFlight(func(s *inFlightState) {
		if len(s.handlerQueue) > 0 {
			h = s.runQueue() // handlerRunning stays true
		} else {
			s.handlerRunning = false
		}
	})
	r.conn.handOn(h)
}

// finish marks a request handled; it reports whether the request was not
// released before, so that the calling goroutine still runs the queue.
func (r *releaser) finish() (stillQueue bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stillQueue = !r.released
	r.released = true
	return stillQueue
}

type AsyncCall struct {
	id       ID
	ready    chan struct{} // closed after response has been set
	response *Response
}

// ID used for this call.
// This can be used to cancel the call if needed.
func (ac *AsyncCall) ID() ID { return ac.id }

// retire processes the response to the call.
//
// It is an error to call retire more than once: retire is guarded by the
// connection's outgoingCalls map.
func (ac *AsyncCall) retire(response *Response) {
	select {
	case <-ac.ready:
		panic(fmt.Sprintf("jsonrpc2: retire called twice for ID %v", ac.id))
	default:
	}

	ac.response = response
	close(ac.ready)
}

// Await waits for (and decodes) the results of a Call.
// The response will be unmarshaled from JSON into the result.
//
// If the call is cancelled due to context cancellation, the result is
// ctx.Err().
func (ac *AsyncCall) Await(ctx context.Context, result any) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ac.ready:
	}
	if ac.response.Error != nil {
		return ac.response.Error
	}
	if result == nil {
		return nil
	}
	return UnmarshalResult(ac.response, result) // PATCH(toolgate): patch 29
}

// Cancel cancels the Context passed to the Handle call for the inbound message
// with the given ID.
//
// Cancel will not complain if the ID is not a currently active message, and it
// will not cause any messages that have not arrived yet with that ID to be
// cancelled.
func (c *Connection) Cancel(id ID) {
	var req *incomingRequest
	c.updateInFlight(func(s *inFlightState) {
		req = s.incomingByID[id]
	})
	if req != nil {
		req.cancel(nil)
	}
}

// Wait blocks until the connection is fully closed, but does not close it.
func (c *Connection) Wait() error {
	return c.wait(true)
}

// wait for the connection to close, and aggregates the most cause of its
// termination, if abnormal.
//
// The fromWait argument allows this logic to be shared with Close, where we
// only want to expose the closeErr.
//
// (Previously, Wait also only returned the closeErr, which was misleading if
// the connection was broken for another reason).
func (c *Connection) wait(fromWait bool) error {
	var err error
	<-c.done
	c.updateInFlight(func(s *inFlightState) {
		if fromWait {
			if !errors.Is(s.readErr, io.EOF) {
				err = s.readErr
			}
			if err == nil && !errors.Is(s.writeErr, io.EOF) {
				err = s.writeErr
			}
		}
		if err == nil {
			err = s.closeErr
		}
	})
	return err
}

// Close stops accepting new requests, waits for in-flight requests and enqueued
// Handle calls to complete, and then closes the underlying stream.
//
// After the start of a Close, notification requests (that lack IDs and do not
// receive responses) will continue to be passed to the Preempter, but calls
// with IDs will receive immediate responses with ErrServerClosing, and no new
// requests (not even notifications!) will be enqueued to the Handler.
func (c *Connection) Close() error {
	// Stop handling new requests, and interrupt the reader (by closing the
	// connection) as soon as the active requests finish.
	c.updateInFlight(func(s *inFlightState) { s.connClosing = true })
	return c.wait(false)
}

// readIncoming collects inbound messages from the reader and delivers them, either responding
// to outgoing calls or feeding requests to the queue.
func (c *Connection) readIncoming(ctx context.Context, reader Reader, preempter Preempter) {
	var err error
	for {
		var msg Message
		msg, err = reader.Read(ctx)
		if err != nil {
			break
		}

		handed := false // PATCH(toolgate): patch 34
		switch msg := msg.(type) {
		case *Request:
			handed = c.acceptRequest(ctx, msg, preempter)

		case *Response:
			c.updateInFlight(func(s *inFlightState) {
				n, isInt := msg.ID.value.(int64) // PATCH(toolgate): patch 37
				if ac, ok := s.outgoingCalls[n]; ok && isInt {
					delete(s.outgoingCalls, n)
					ac.retire(msg)
					handed = true
				} else {
					// TODO: How should we report unexpected responses?
				}
			})

		default:
			c.internalErrorf("Read returned an unexpected message of type %T", msg)
		}
		if handed && runtime.GOMAXPROCS(0) == 1 {
			// PATCH(toolgate): patch 34. On one processor, the goroutine
			// this message was handed to (a handler woken or started, a
			// caller awaiting its response) runs before this one reads
			// again: the next Read of a drained stream is a system call
			// that finds nothing (EAGAIN) and parks in the poller, work
			// that need not come before the handler's. With more, the
			// goroutine readied may run elsewhere at once: the gate spares
			// the Gosched (the reader put on the global run queue and a
			// reschedule, for every message). Reading GOMAXPROCS costs
			// ~10 ns under the scheduler's lock (BenchmarkYieldGate); it
			// is read each time, as it may change at run time.
			runtime.Gosched()
		}
	}

	c.updateInFlight(func(s *inFlightState) {
		s.reading = false
		s.readErr = err

		// Retire any outgoing requests that were still in flight: with the Reader no
		// longer being processed, they necessarily cannot receive a response.
		for _, ac := range s.outgoingCalls {
			ac.retire(&Response{ID: ac.id, Error: err}) // PATCH(toolgate): patch 37 (ac.id is its key's Int64ID)
		}
		s.outgoingCalls = nil

		// Cancel any incoming requests still in flight: with the reader gone we
		// cannot receive cancellation notifications, and likely cannot write a
		// response either, so parked handlers have nothing useful left to do.
		// The read error (typically io.EOF from the peer disconnecting) is the
		// cause, rather than a directional ErrServerClosing/ErrClientClosing
		// sentinel: at this layer the connection has no designated end.
		for _, r := range s.incomingByID {
			r.cancel(err)
		}
	})
}

// acceptRequest either handles msg synchronously or enqueues it to be handled
// asynchronously.
//
// PATCH(toolgate): patch 34. It reports whether it handed the request to
// another goroutine (woke a parked one or started one).
func (c *Connection) acceptRequest(ctx context.Context, msg *Request, preempter Preempter) (handed bool) {
	// In theory notifications cannot be cancelled, but we build them a cancel
	// context anyway.
	reqCtx, cancel := context.WithCancelCause(ctx)
	req := &incomingRequest{
		Request: msg,
		ctx:     reqCtx,
		cancel:  cancel,
	}

	// If the request is a call, add it to the incoming map so it can be
	// cancelled (or responded) by ID.
	var err error
	c.updateInFlight(func(s *inFlightState) {
		s.incoming++

		if req.IsCall() {
			if s.incomingByID[req.ID] != nil {
				err = fmt.Errorf("%w: request ID %v already in use", ErrInvalidRequest, req.ID)
				req.ID = ID{} // Don't misattribute this error to the existing request.
				return
			}

			if s.incomingByID == nil {
				s.incomingByID = make(map[ID]*incomingRequest)
			}
			s.incomingByID[req.ID] = req

			// When shutting down, reject all new Call requests, even if they could
			// theoretically be handled by the preempter. The preempter could return
			// ErrAsyncResponse, which would increase the amount of work in flight
			// when we're trying to ensure that it strictly decreases.
			err = s.shuttingDown(ErrServerClosing)
		}
	})
	if err != nil {
		c.processResult("acceptRequest", req, nil, err)
		return
	}

	if preempter != nil {
		result, err := preempter.Preempt(req.ctx, req.Request)

		if !errors.Is(err, ErrNotHandled) {
			c.processResult("Preempt", req, result, err)
			return
		}
	}

	var h handoff // PATCH(toolgate): patch 14, see runQueue (patch 37: was a func)
	c.updateInFlight(func(s *inFlightState) {
		// If the connection is shutting down, don't enqueue anything to the
		// handler — not even notifications. That ensures that if the handler
		// continues to make progress, it will eventually become idle and
		// close the connection.
		err = s.shuttingDown(ErrServerClosing)
		if err != nil {
			return
		}

		// We enqueue requests that have not been preempted to an unbounded slice.
		// Unfortunately, we cannot in general limit the size of the handler
		// queue: we have to read every response that comes in on the wire
		// (because it may be responding to a request issued by, say, an
		// asynchronous handler), and in order to get to that response we have
		// to read all of the requests that came in ahead of it.
		s.handlerQueue = append(s.handlerQueue, req)
		if !s.handlerRunning {
			// We start the handleAsync goroutine when it has work to do, and let it
			// exit when the queue empties.
			//
			// Otherwise, in order to synchronize the handler we would need some other
			// goroutine (probably readIncoming?) to explicitly wait for handleAsync
			// to finish, and that would complicate error reporting: either the error
			// report from the goroutine would be blocked on the handler emptying its
			// queue (which was tried, and introduced a deadlock detected by
			// TestCloseCallRace), or the error would need to be reported separately
			// from synchronizing completion. Allowing the handler goroutine to exit
			// when idle seems simpler than trying to implement either of those
			// alternatives correctly.
			s.handlerRunning = true
			h = s.runQueue()
		}
	})
	if err != nil {
		c.processResult("acceptRequest", req, nil, err)
	}
	return c.handOn(h)
}

// handleAsync invokes the handler on the requests in the handler queue
// sequentially until the queue is empty.
//
// PATCH(toolgate): patch 14. Then, and when the request it handled was
// released (the queue went on without it), the goroutine parks to run the
// queue again rather than end: the next request does not start a new
// goroutine, whose stack grows again, copying itself, through the handler.
func (c *Connection) handleAsync() {
	// PATCH(toolgate): patch 40. handled is set when the request this
	// goroutine handled last is answered (respond) but not yet retired
	// from the count of incoming requests: the next update retires it
	// (processResult's own update did, one more lock round a request).
	handled := false
	for {
		var req *incomingRequest
		c.updateInFlight(func(s *inFlightState) {
			if handled {
				s.retireIncoming()
			}
			if len(s.handlerQueue) > 0 {
				// PATCH(toolgate): patch 37. The slot is cleared, and a
				// queue left empty keeps its array from the start: the
				// next append needs no new one (v1.8.0's q[1:] left
				// none free, and each request grew a new array).
				req = s.handlerQueue[0]
				s.handlerQueue[0] = nil
				if len(s.handlerQueue) == 1 {
					s.handlerQueue = s.handlerQueue[:0]
				} else {
					s.handlerQueue = s.handlerQueue[1:]
				}
			} else {
				s.handlerRunning = false
			}
		})
		handled = false
		if req == nil {
			if !c.park(false) {
				return
			}
			continue
		}

		// Only deliver to the Handler if not already canceled. If the request
		// was canceled with a cause (e.g. a write failure cancels every
		// in-flight request), report that cause rather than the bare
		// context.Canceled.
		if err := req.ctx.Err(); err != nil {
			if cause := context.Cause(req.ctx); cause != nil {
				err = cause
			}
			c.respond("handleAsync", req, nil, err) // PATCH(toolgate): patch 40, see handled
			handled = true
			continue
		}

		// PATCH(toolgate): handled here; Async hands the queue on (see releaser).
		r := &req.rel // PATCH(toolgate): patch 37 (was a new releaser)
		r.conn = c
		ctx := context.WithValue(req.ctx, asyncKey, r)
		result, err := c.handler.Handle(ctx, req.Request)
		c.respond(c.handler, req, result, err) // PATCH(toolgate): patch 40, see handled
		handled = true
		if !r.finish() {
			handled = false // retired by park
			if !c.park(true) {
				return // released: the queue went on without this goroutine
			}
		}
	}
}

// PATCH(toolgate): patch 14. maxParked bounds the goroutines a connection
// keeps parked: as many as requests a client usually has in flight.
// toolgate's mcpserver.freshCalls is this + 1: change both together.
const maxParked = 8

// PATCH(toolgate): patch 14. park waits, when fewer than maxParked
// goroutines do, until the handler queue is handed to this one (it returns true: the
// queue is this goroutine's to run, handlerRunning is set) or the
// connection is done (false). It returns false at once when maxParked
// goroutines are parked already.
//
// PATCH(toolgate): patch 40. With retire set, the request the goroutine
// answered last is retired from the count of incoming requests in the
// same update (see handleAsync's handled).
func (c *Connection) park(retire bool) bool {
	parked := false
	c.updateInFlight(func(s *inFlightState) {
		if retire {
			s.retireIncoming()
		}
		if s.parked < maxParked {
			s.parked++
			parked = true
		}
	})
	if !parked {
		return false
	}
	select {
	case <-c.wake:
		return true
	case <-c.done:
		// No wake can be pending: one is sent only with handlerRunning
		// set, and done is closed only when it is not.
		return false
	}
}

// PATCH(toolgate): patch 14. runQueue, called with handlerRunning just set
// (or kept) for a queue that is not empty, returns how the queue is handed
// to a goroutine, by handOn once the state is unlocked: the parked one is
// woken (it is on its way to, or in, park's select, and needs no lock to
// get there; the parked are alike, any one takes it), else a new one is
// started, as v1.8.0 did.
//
// PATCH(toolgate): patch 37. It returned a func doing that, a closure
// allocated per request.
func (s *inFlightState) runQueue() handoff {
	if s.parked > 0 {
		s.parked--
		return wakeParked
	}
	return startHandler
}

// PATCH(toolgate): patch 37. A handoff is how runQueue hands the queue on.
type handoff uint8

const (
	noHandoff    handoff = iota // none: the queue was not handed on
	wakeParked                  // to a parked goroutine
	startHandler                // to a new goroutine
)

// PATCH(toolgate): patch 37. handOn hands the queue on as h says, and
// reports whether it did (h is not noHandoff).
func (c *Connection) handOn(h handoff) bool {
	switch h {
	case wakeParked:
		c.wake <- struct{}{}
	case startHandler:
		go c.handleAsync()
	default:
		return false
	}
	return true
}

// processResult processes the result of a request and, if appropriate, sends a response.
//
// PATCH(toolgate): patch 40. It is respond, then the request retired from
// the count of incoming requests in an update of its own; handleAsync
// calls respond and retires the request in its next update.
func (c *Connection) processResult(from any, req *incomingRequest, result any, err error) error {
	c.respond(from, req, result, err)
	c.updateInFlight(func(s *inFlightState) { s.retireIncoming() })
	return nil
}

// PATCH(toolgate): patch 40. retireIncoming is v1.8.0's end of
// processResult: a request answered leaves the count of incoming ones.
func (s *inFlightState) retireIncoming() {
	if s.incoming == 0 {
		panic("jsonrpc2: a request retired when incoming count is already zero")
	}
	s.incoming--
}

// PATCH(toolgate): patch 40. respond is v1.8.0's processResult up to its
// last update (the request is answered and cancelled; the caller retires
// it: retireIncoming).
func (c *Connection) respond(from any, req *incomingRequest, result any, err error) {
	if nomethodnotfoundcodeinerror != "1" && (errors.Is(err, ErrNotHandled) || errors.Is(err, ErrMethodNotFound)) {
		err = fmt.Errorf("%w: %q", ErrMethodNotFound, req.Method)
	}

	if result != nil && err != nil {
		c.internalErrorf("%#v returned a non-nil result with a non-nil error for %s:\n%v\n%#v", from, req.Method, err, result)
		result = nil // Discard the spurious result and respond with err.
	}

	if req.IsCall() {
		if result == nil && err == nil {
			err = c.internalErrorf("%#v returned a nil result and nil error for a %q Request that requires a Response", from, req.Method)
		}

		response := &req.resp // PATCH(toolgate): patch 40 (was NewResponse's)
		respErr := response.set(req.ID, result, err)

		// The caller could theoretically reuse the request's ID as soon as we've
		// sent the response, so ensure that it is removed from the incoming map
		// before sending.
		//
		// PATCH(toolgate): patch 37. write's check (shuttingDown) is made
		// in the same update, and send writes after it.
		var writeErr error
		c.updateInFlight(func(s *inFlightState) {
			delete(s.incomingByID, req.ID)
			if respErr == nil {
				writeErr = s.shuttingDown(ErrServerClosing)
			}
		})
		if respErr == nil {
			writeErr = c.send((*requestNotDone)(req), response, writeErr) // PATCH(toolgate): patch 38
			if err == nil {
				err = writeErr
			}
		} else {
			err = c.internalErrorf("%#v returned a malformed result for %q: %w", from, req.Method, respErr)
		}
	} else { // req is a notification
		if result != nil {
			err = c.internalErrorf("%#v returned a non-nil result for a %q Request without an ID", from, req.Method)
		} else if err != nil {
			err = fmt.Errorf("%w: %q notification failed: %v", ErrInternal, req.Method, err)
		}
	}
	if err != nil {
		// TODO: can/should we do anything with this error beyond writing it to the event log?
		// (Is this the right label to attach to the log?)
	}

	// Cancel the request to free any associated resources.
	req.cancel(nil)
}

// write is used by all things that write outgoing messages, including replies.
// it makes sure that writes are atomic
func (c *Connection) write(ctx context.Context, msg Message) error {
	var err error
	// Fail writes immediately if the connection is shutting down.
	//
	// Allow outgoing "notifications" forwarded by the Notify method.
	// This will allow to send the cancelled notification when the client is shutting down.
	c.updateInFlight(func(s *inFlightState) {
		if req, ok := msg.(*Request); ok && !req.IsCall() && s.outgoingNotifications > 0 {
			return
		}
		err = s.shuttingDown(ErrServerClosing)
	})
	return c.send(ctx, msg, err)
}

// PATCH(toolgate): patch 37. send is write after its check: err is what
// the check gave (nil: msg is written). Call and processResult make the
// check in an update of their own and call send.
func (c *Connection) send(ctx context.Context, msg Message, err error) error {
	if err == nil {
		if c.freeing != nil {
			// PATCH(toolgate): patch 31. Nothing holds msg once this
			// returns: not the callers of write (processResult drops
			// its response, Call and Notify their request), and no
			// Writer wraps this one.
			err = c.freeing.WriteFree(ctx, msg)
		} else {
			err = c.writer.Write(ctx, msg)
		}
	}

	// For cancelled or rejected requests, we don't set the writeErr (which would
	// break the connection). They can just be returned to the caller.
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrRejected) {
		// The call to Write failed, and since ctx.Err() is nil we can't attribute
		// the failure (even indirectly) to Context cancellation. The writer appears
		// to be broken, and future writes are likely to also fail.
		//
		// If the read side of the connection is also broken, we might not even be
		// able to receive cancellation notifications. Since we can't reliably write
		// the results of incoming calls and can't receive explicit cancellations,
		// cancel the calls now.
		c.updateInFlight(func(s *inFlightState) {
			if s.writeErr == nil {
				s.writeErr = err
				for _, r := range s.incomingByID {
					r.cancel(fmt.Errorf("%w: %v", ErrServerClosing, err))
				}
			}
		})
	}

	return err
}

// internalErrorf reports an internal error. By default it panics, but if
// c.onInternalError is non-nil it instead calls that and returns an error
// wrapping ErrInternal.
func (c *Connection) internalErrorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if c.onInternalError == nil {
		panic("jsonrpc2: " + err.Error())
	}
	c.onInternalError(err)

	return fmt.Errorf("%w: %v", ErrInternal, err)
}

// notDone is a context.Context wrapper that returns a nil Done channel.
//
// Request handlers' contexts are derived from the connection's root context,
// which by default is wrapped in notDone so a transport-level cancellation
// does not implicitly cancel every in-flight handler. Cancellation of an
// in-flight handler is instead expected to flow only through the jsonrpc2
// layer's explicit channels: the [Preempter] calling [Connection.Cancel] in
// response to the peer's cancel notification, or the transport itself
// failing (the read loop exits on EOF or a write fails) — both of which
// cancel every in-flight incoming request in turn.
type notDone struct{ ctx context.Context }

func (ic notDone) Value(key any) any {
	return ic.ctx.Value(key)
}

func (notDone) Done() <-chan struct{}       { return nil }
func (notDone) Err() error                  { return nil }
func (notDone) Deadline() (time.Time, bool) { return time.Time{}, false }

// PATCH(toolgate): patch 38. requestNotDone is notDone{req.ctx} of an
// incomingRequest req (whose ctx is set once, when it is made), as a
// pointer: it goes into a context.Context without an allocation.
type requestNotDone incomingRequest

func (r *requestNotDone) Value(key any) any         { return r.ctx.Value(key) }
func (*requestNotDone) Done() <-chan struct{}       { return nil }
func (*requestNotDone) Err() error                  { return nil }
func (*requestNotDone) Deadline() (time.Time, bool) { return time.Time{}, false }
