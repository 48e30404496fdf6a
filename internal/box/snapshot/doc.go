// Package snapshot saves and restores a box's writable layer (the
// overlayfs upper directory) as zstd-compressed tar archives, and keeps
// them in HERMES_HOME/snapshots with a JSON manifest each (Store).
//
// Archives are standard: `zstd -dc SNAP.tar.zst | tar -tvf -` lists one.
// Extraction never leaves its target (see Restore), so an archive edited
// by an attacker cannot write outside the layer it restores. Snapshots
// follow E2B's semantics (a snapshot outlives its box until removed;
// sandbox.md §D4).
package snapshot
