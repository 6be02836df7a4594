// Package benchrun holds the helpers the bench programs (bench/*/main.go)
// share: percentiles of their samples, the CPU time of a process tree from
// /proc, and starting a program that announces its address on standard
// error. It uses the standard library only; reading /proc works on Linux
// alone, elsewhere it reports [errors.ErrUnsupported].
package benchrun
