//go:build !linux

// Command hermes-box-init builds on Linux only (it is a Linux box's PID 1).
// On another system the build stops here, with a type
// error quoting "hermes builds on Linux only".
package main

// main_linux.go, and with it every Linux-only package, is left out on
// other systems: this is the only file compiled, and the only error.
var _ int = "hermes builds on Linux only"
