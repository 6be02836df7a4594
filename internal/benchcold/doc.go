// Package benchcold measures what code costs when it finds the CPU's
// caches cold: as a gateway's code and data are when a call comes after
// the upstream (or a model's seconds) ran in between. Run measures a
// function after each of several sweeps of a buffer larger than the
// machine's last-level cache, which evicts the code and data the function
// would otherwise find warm, and reports the time of the function alone
// as ns/op. A benchmark's warm figure and its cold one together say how
// much of a cost is the instructions and how much the lines they fetch.
//
// What it does not show: which lines are missed (no hardware counter is
// needed or read), nor a cost that depends on what else ran on the CPU
// (a real upstream leaves some lines in the shared cache; the sweep
// leaves none).
package benchcold
