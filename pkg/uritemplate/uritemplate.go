// Package uritemplate is a [stateless.URITemplateEngine] built on
// yosida95/uritemplate: it parses the RFC 6570 URI templates of resource
// templates and matches resources/read URIs against them.
//
// A function sets it (stateless.Options.URITemplates) when it registers
// resource templates. Package stateless does not import it, so a
// function with none links no template library, nor the regular
// expression engine the library is built on, and pays neither's package
// initialization at its cold start (0.2 to 0.4 ms of it on the machine
// docs/performance.md was measured on).
package uritemplate

import "github.com/yosida95/uritemplate/v3"

// Engine parses templates with yosida95/uritemplate. The zero value is
// ready to use.
type Engine struct{}

// Parse checks template and returns its matcher. A URI matches when the
// template's regular expression matches all of it; the variables are
// then the library's match of it, each value decoded ("" for a variable
// that matched a list, or nothing).
func (Engine) Parse(template string) (func(uri string) (map[string]string, bool), error) {
	t, err := uritemplate.New(template)
	if err != nil {
		return nil, err
	}
	// The expression decides: the library's matcher alone also takes
	// some URIs the template cannot expand to ("0" for "{/0}").
	re := t.Regexp()
	names := t.Varnames()
	return func(uri string) (map[string]string, bool) {
		if !re.MatchString(uri) {
			return nil, false
		}
		vals := t.Match(uri)
		vars := make(map[string]string, len(names))
		for _, n := range names {
			vars[n] = vals.Get(n).String()
		}
		return vars, true
	}, nil
}
