//go:build !linux

// Command hermes builds on Linux only: its sandboxes are Linux namespaces,
// cgroups, seccomp and Landlock. On another system the build stops here,
// with a type error quoting "hermes builds on Linux only" (rather than on
// the first Linux-only call it meets); build it on Linux, in a Linux VM or
// container.
package main

// main_linux.go, and with it every Linux-only package, is left out on
// other systems: this is the only file compiled, and the only error.
var _ int = "hermes builds on Linux only"
