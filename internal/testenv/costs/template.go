package costs

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Resource is one resource of a SAM template: its logical id, type and
// condition ("" when it is always made).
type Resource struct {
	Name, Type, Condition string
}

// Template is what the cost tables read of template.yaml.
type Template struct {
	Resources []Resource
	// MemoryMB and Architecture are the functions' (Globals.Function).
	MemoryMB     int
	Architecture string
}

var (
	topKey      = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9]*):`)
	resourceKey = regexp.MustCompile(`^  ([A-Za-z][A-Za-z0-9]*):\s*(#.*)?$`)
	propertyKey = regexp.MustCompile(`^    (Type|Condition|MemorySize|Architectures):\s*(.*?)\s*(#.*)?$`)
)

// ParseTemplate reads a SAM template's resources, each with its type and
// condition, and the functions' memory and architecture from Globals. It
// reads the template's layout (two spaces a level, as template.yaml is
// written), not YAML at large.
func ParseTemplate(b []byte) (*Template, error) {
	t := &Template{}
	section := ""
	var cur *Resource
	globalsFunction := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := topKey.FindStringSubmatch(line); m != nil {
			section, cur, globalsFunction = m[1], nil, false
			continue
		}
		if m := resourceKey.FindStringSubmatch(line); m != nil {
			cur = nil
			if section == "Resources" {
				t.Resources = append(t.Resources, Resource{Name: m[1]})
				cur = &t.Resources[len(t.Resources)-1]
			}
			globalsFunction = section == "Globals" && m[1] == "Function"
			continue
		}
		m := propertyKey.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		switch {
		case section == "Resources" && cur != nil && m[1] == "Type":
			cur.Type = m[2]
		case section == "Resources" && cur != nil && m[1] == "Condition":
			cur.Condition = m[2]
		case globalsFunction && m[1] == "MemorySize":
			n, err := strconv.Atoi(m[2])
			if err != nil {
				return nil, fmt.Errorf("the functions' MemorySize %q is not a number", m[2])
			}
			t.MemoryMB = n
		case globalsFunction && m[1] == "Architectures":
			t.Architecture = strings.Trim(m[2], "[] ")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, r := range t.Resources {
		if r.Type == "" {
			return nil, fmt.Errorf("resource %s has no Type", r.Name)
		}
	}
	if t.MemoryMB == 0 || t.Architecture == "" {
		return nil, fmt.Errorf("no Globals.Function MemorySize and Architectures")
	}
	return t, nil
}

// OfType are the resources of type typ, in the template's order.
func (t *Template) OfType(typ string) []Resource {
	var out []Resource
	for _, r := range t.Resources {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}
