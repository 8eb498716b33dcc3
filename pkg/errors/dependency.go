package mcperr

import (
	"fmt"
	"net/http"
	"strconv"
)

// DependencyError says which dependency of a tool failed and how, in
// terms an operator can act on: the HTTP dependency's host and the status
// it answered (0: it could not be reached, Err says why). A tool wraps
// the failure of a call it made in one (HTTPDependency) and returns it,
// or wraps it in its own failure (NewRetryLater's cause): package observe
// writes the host and the status in the request's fault line, whatever
// the tool's error text may not say. The host is the tool's to vouch
// for: name the service it calls, never a host taken from the call's
// arguments. AWS SDK errors need none of this: the line names their
// service, operation, error code and status already.
type DependencyError struct {
	Host   string
	Status int
	Err    error
}

// HTTPDependency is the DependencyError of an HTTP call to host that
// answered resp (nil when it failed with err, before an answer).
func HTTPDependency(host string, resp *http.Response, err error) *DependencyError {
	d := &DependencyError{Host: host, Err: err}
	if resp != nil {
		d.Status = resp.StatusCode
	}
	return d
}

func (e *DependencyError) Error() string {
	switch {
	case e.Status != 0 && e.Err != nil:
		return fmt.Sprintf("dependency %s answered %d: %v", e.Host, e.Status, e.Err)
	case e.Status != 0:
		return "dependency " + e.Host + " answered " + strconv.Itoa(e.Status)
	case e.Err != nil:
		return fmt.Sprintf("dependency %s: %v", e.Host, e.Err)
	}
	return "dependency " + e.Host + " failed"
}

func (e *DependencyError) Unwrap() error { return e.Err }
