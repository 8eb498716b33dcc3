// Package mcplambda holds the files at the root of this repository that
// cmd/mcp-sam writes a deploy kit from, in a module of your own: the SAM
// template, which the kit's template.yaml is, and the Makefile, whose
// build flags and emulator version the kit's mcp.mk repeats. A package of
// the repository's root directory because go:embed reads files at or
// below a package's own directory.
package mcplambda

import _ "embed"

//go:embed template.yaml
var template string

//go:embed Makefile
var makefile string

// Template is the repository's SAM template, template.yaml, as this
// version of the module has it.
func Template() string { return template }

// Makefile is the repository's Makefile, as this version of the module
// has it.
func Makefile() string { return makefile }
