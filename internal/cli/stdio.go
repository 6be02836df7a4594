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
		if p := pollable(f, false); p != nil {
			return p
		}
	}
	return in
}

// pollableStdout is standard output (of toolgate serve or proxy) as a file
// of its own that the poller waits on, when it is a pipe open for writing
// in blocking mode (as pollableStdin, a new open file description of the
// same pipe), else nil. The go-sdk writes such a file with raw system
// calls, which do not wake the runtime's monitor thread
// (third_party/go-sdk/PATCHES.md, patch 7).
func pollableStdout(out io.Writer) *os.File {
	if f, ok := out.(*os.File); ok {
		return pollable(f, true)
	}
	return nil
}

// stdioTransport is MCP over the standard streams, with standard input read
// and standard output written through the poller when they are blocking
// pipes (pollableStdin, pollableStdout). Those descriptions are the
// transport's own, so they are given to the transport to close: a Close
// then interrupts a read in progress, and the go-sdk reads it without a
// goroutine of its own (third_party/go-sdk/PATCHES.md, patch 3) and reads
// and writes them with raw system calls (patch 7). The process's own
// standard input and output are never closed.
func stdioTransport(s *streams) *mcp.IOTransport {
	var w io.WriteCloser = nopWriteCloser{s.out}
	if f := pollableStdout(s.out); f != nil {
		w = f
	}
	in := pollableStdin(s.in)
	if f, ok := in.(*os.File); ok && in != s.in {
		return &mcp.IOTransport{Reader: f, Writer: w}
	}
	return &mcp.IOTransport{Reader: io.NopCloser(in), Writer: w}
}
