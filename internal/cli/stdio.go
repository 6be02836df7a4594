package cli

import (
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pollableStdin returns standard input (of toolgate serve or proxy) as a
// file that Go's network poller waits on, when it is a pipe (as an MCP
// client starts a stdio server) open for reading in blocking mode;
// anything else is returned as it is.
//
// A pipe a program inherits is usually in blocking mode, so os.Stdin reads
// it in a blocking read(2): the thread holds its P while the server waits
// for the next request, and whenever the server is busy, the runtime's
// monitor takes the P away and hands it back as the read returns, a few
// thread wake-ups more per call (bench/proxy: about 5-8% of the gateway's
// CPU per call). A polled file is also one the go-sdk reads without a
// goroutine of its own (stdioTransport). The pipe is opened again through
// /proc/self/fd, which on Linux makes a new open file description of the
// same pipe: O_NONBLOCK is set on that one only, never on the description
// the client (or a shell) may share.
func pollableStdin(in io.Reader) io.Reader {
	if f, ok := in.(*os.File); ok {
		if p := pollable(f); p != nil {
			return p
		}
	}
	return in
}

// stdioTransport is MCP over the standard streams, with standard input read
// through the poller when it is a blocking pipe (pollableStdin). That
// description is the transport's own, so it is given to the transport to
// close: a Close then interrupts a read in progress, and the go-sdk reads
// it without a goroutine of its own (third_party/go-sdk/PATCHES.md, patch
// 3). The process's own standard input and output are never closed.
func stdioTransport(s *streams) *mcp.IOTransport {
	in := pollableStdin(s.in)
	if f, ok := in.(*os.File); ok && in != s.in {
		return &mcp.IOTransport{Reader: f, Writer: nopWriteCloser{s.out}}
	}
	return &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{s.out}}
}
