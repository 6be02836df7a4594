// Package heapfloor keeps Go's garbage collector from running more often
// than every so many bytes of allocation while the live heap is small.
//
// The collector runs when the heap has grown by GOGC percent (100) of what
// the last cycle left live. A server's live heap is small (toolgate serve
// keeps 3-4 MB), so it runs every 3-4 MB of garbage, and each cycle costs
// about the same whatever the garbage: marking the live heap and the
// stacks, waking the mark workers. A read_process answer with 8 KiB of
// output makes about 150 KB of garbage (the output read, checked,
// redacted, encoded, framed), so the collector ran every 16-20 calls;
// with a floor of 32 MiB it runs once every 200, and the server runs a
// fifth fewer instructions per call (bench/processes).
//
// [Keep] sets GOGC after each cycle so that the next starts no sooner than
// floor bytes later; once the live heap is over floor, GOGC is 100 again,
// Go's default: a large heap grows as it would without the floor. The
// price is memory: the heap may reach the live heap plus floor.
//
// It does nothing when the GOGC environment variable is set: the user's
// choice wins. Only the programs call it: library users keep Go's default.
package heapfloor
