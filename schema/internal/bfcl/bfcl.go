// Package bfcl measures package schema against the Berkeley Function
// Calling Leaderboard (BFCL v4) data: every function's parameters must
// normalize to JSON Schema 2020-12 and compile for every provider, and the
// gold calls of possible_answer/ should validate against the normalized
// schemas.
//
// # Gold calls
//
// A gold call names a function and gives, for each parameter, a list of
// acceptable values; "" in that list means the parameter may be left out.
// A concrete call is built from the first acceptable value that is not "";
// a parameter whose only acceptable value is "" is left out. A value that
// is an object whose members are all lists is itself such a set of
// acceptable values (BFCL writes nested dict parameters that way, also as
// items of a list): it is made concrete the same way, recursively. Any other
// value is used as it is. Where "" is acceptable, the call without that
// parameter is checked too (the parameter must not be required).
package bfcl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/schema"
)

// Function is one BFCL function declaration.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Failure is one function or gold call that did not pass, and why.
type Failure struct {
	ID, Function, Reason string
	Category             string // one of the Category* constants
}

// Categories of failures.
const (
	CategorySchema   = "schema does not normalize or compile"
	CategoryEnum     = "gold value outside the declared enum"
	CategoryRequired = "gold call leaves out a required parameter"
	CategoryOmission = `gold marks a required parameter optional ("")`
	CategoryCode     = "gold passes source code (a variable name, a constant) as a string for a non-string Java/JavaScript parameter"
	CategoryType     = "gold value of another type than declared"
	CategoryUnknown  = "gold call names no declared function"
)

func classify(id, reason string) string {
	switch {
	case strings.HasPrefix(reason, "gold says"):
		return CategoryOmission
	case strings.Contains(reason, "required property"):
		return CategoryRequired
	case strings.Contains(reason, "expected one of"):
		return CategoryEnum
	case (strings.HasPrefix(id, "simple_java") || strings.HasPrefix(id, "simple_javascript")) && strings.Contains(reason, "got string"):
		return CategoryCode
	}
	return CategoryType
}

// Report is the outcome of Run.
type Report struct {
	Functions, Normalized int // function declarations, and how many normalized
	Compiled              map[schema.Provider]int
	Renamed               int            // function names that ToolName had to change
	Changes               map[string]int // how often each change was made (to distinct declarations)
	Calls, Valid          int            // gold calls, and how many validate
	Omissions, OmitValid  int            // parameters gold says may be left out, and how many may
	Failures              []Failure
	seen                  map[string]compiled // by the declaration's text
}

// Run measures the data in dir (the bfcl-v4 folder).
func Run(dir string) (*Report, error) {
	files, err := filepath.Glob(filepath.Join(dir, "BFCL_v4_*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no BFCL_v4_*.json files in %s", dir)
	}
	sort.Strings(files)
	r := &Report{Compiled: map[schema.Provider]int{}, Changes: map[string]int{}, seen: map[string]compiled{}}
	for _, f := range files {
		if err := r.file(f, filepath.Join(dir, "possible_answer", filepath.Base(f))); err != nil {
			return nil, err
		}
	}
	return r, nil
}

type entry struct {
	ID       string     `json:"id"`
	Function []Function `json:"function"`
}

type goldEntry struct {
	ID          string                      `json:"id"`
	GroundTruth []map[string]map[string]any `json:"ground_truth"`
}

type compiled struct {
	sch    *schema.Schema
	raw    json.RawMessage
	errMsg string
}

func (r *Report) file(path, goldPath string) error {
	funcs := map[string]map[string]compiled{} // id → function name → schema
	err := eachLine(path, func(line []byte) error {
		var e entry
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		funcs[e.ID] = map[string]compiled{}
		var names schema.Names
		for _, fn := range e.Function {
			r.Functions++
			before := len(r.Failures)
			if names.Tool(fn.Name) != fn.Name {
				r.Renamed++
			}
			if c, ok := r.seen[string(fn.Parameters)]; ok { // a declaration met before
				funcs[e.ID][fn.Name] = c
				if c.sch != nil {
					r.Normalized++
					for _, p := range schema.Providers() {
						r.Compiled[p]++
					}
				}
				continue
			}
			norm, changes, err := schema.Normalize(fn.Parameters)
			if err != nil {
				r.Failures = append(r.Failures, Failure{e.ID, fn.Name, "normalize: " + err.Error(), CategorySchema})
				funcs[e.ID][fn.Name] = compiled{errMsg: err.Error()}
				continue
			}
			r.Normalized++
			for _, c := range changes {
				r.Changes[c.Change]++
			}
			for _, p := range schema.Providers() {
				if _, err := schema.CompileFor(p, norm); err != nil {
					r.Failures = append(r.Failures, Failure{e.ID, fn.Name, fmt.Sprintf("compile for %s: %v", p, err), CategorySchema})
				} else {
					r.Compiled[p]++
				}
			}
			sch, err := schema.Compile(norm)
			if err != nil {
				return fmt.Errorf("%s %s: normalized schema does not compile: %w", e.ID, fn.Name, err)
			}
			funcs[e.ID][fn.Name] = compiled{sch: sch, raw: norm}
			if len(r.Failures) == before {
				r.seen[string(fn.Parameters)] = funcs[e.ID][fn.Name]
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := os.Stat(goldPath); err != nil {
		return nil // irrelevance has no gold calls
	}
	err = eachLine(goldPath, func(line []byte) error {
		var g goldEntry
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&g); err != nil {
			return err
		}
		for _, call := range g.GroundTruth {
			for name, params := range call {
				r.Calls++
				c, ok := funcs[g.ID][name]
				switch {
				case !ok:
					r.Failures = append(r.Failures, Failure{g.ID, name, "gold call names no declared function", CategoryUnknown})
					continue
				case c.sch == nil:
					r.Failures = append(r.Failures, Failure{g.ID, name, "schema did not normalize", CategorySchema})
					continue
				}
				args, omittable := Concrete(params)
				if reason := validate(c.sch, args); reason != "" {
					r.Failures = append(r.Failures, Failure{g.ID, name, reason, classify(g.ID, reason)})
				} else {
					r.Valid++
				}
				for _, p := range omittable {
					r.Omissions++
					without := make(map[string]any, len(args))
					for k, v := range args {
						if k != p {
							without[k] = v
						}
					}
					if reason := validate(c.sch, without); reason != "" {
						msg := fmt.Sprintf("gold says %q may be left out, but: %s", p, reason)
						r.Failures = append(r.Failures, Failure{g.ID, name, msg, classify(g.ID, msg)})
					} else {
						r.OmitValid++
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", goldPath, err)
	}
	return nil
}

func validate(sch *schema.Schema, args map[string]any) string {
	raw, err := json.Marshal(args)
	if err != nil {
		return err.Error()
	}
	parsed, terr := schema.ParseArguments(raw)
	if terr != nil {
		return terr.Message
	}
	errs := sch.Validate(parsed)
	if len(errs) == 0 {
		return ""
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Message
	}
	return strings.Join(msgs, "; ")
}

// Concrete builds a concrete call from a gold call's parameters (see the
// package doc) and lists the parameters gold says may be left out.
func Concrete(params map[string]any) (args map[string]any, omittable []string) {
	args = map[string]any{}
	for name, v := range params {
		vals, ok := v.([]any)
		if !ok {
			args[name] = v
			continue
		}
		chosen, found, empty := first(vals)
		if empty {
			omittable = append(omittable, name)
		}
		if found {
			args[name] = concreteValue(chosen)
		}
	}
	sort.Strings(omittable)
	return args, omittable
}

// first returns the first acceptable value that is not "", and whether ""
// is acceptable.
func first(vals []any) (v any, found, empty bool) {
	for _, x := range vals {
		if x == "" {
			empty = true
			continue
		}
		if !found {
			v, found = x, true
		}
	}
	return v, found, empty
}

// concreteValue turns a set of acceptable values (an object whose members
// are all lists) into a value, recursively through lists.
func concreteValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return x
		}
		for _, m := range x {
			if _, ok := m.([]any); !ok {
				return x
			}
		}
		out, _ := Concrete(x)
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			if m, ok := e.(map[string]any); ok {
				out[i] = concreteValue(m)
			} else {
				out[i] = e
			}
		}
		return out
	}
	return v
}

func eachLine(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
	return sc.Err()
}
