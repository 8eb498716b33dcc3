//go:build !linux

package main

// reload is a no-op where the bootstrap cannot run (the emulator and its
// bootstraps are Linux's): only sizes are measured there.
func reload(string) error { return nil }
