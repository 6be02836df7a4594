package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/atomicfile"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// AppendAllow adds rule to the top-level allow list of the policy file at
// file, keeping everything else byte for byte (comments included): the new
// entry is a line inserted after the list's last entry (or the list is
// created at the end of the file). The result is parsed again and must be
// the same policy plus that rule, else nothing is written. The file is
// replaced atomically (a temporary file in the same folder, synced, then
// renamed over it), keeping its permissions. A rule already in the list is
// not added twice.
//
// Writers in other processes are not locked out: the last rename wins.
func AppendAllow(file, rule string) error {
	if _, err := compileRule(rule); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	before, err := parse(data, file)
	if err != nil {
		return fmt.Errorf("policy: the file no longer loads, so no rule was added: %w", err)
	}
	if slices.Contains(before.Allow, rule) {
		return nil
	}
	out, err := insertAllow(data, rule)
	if err != nil {
		return fmt.Errorf("policy: %s: %w", file, err)
	}
	after, err := parse(out, file)
	if err != nil {
		return fmt.Errorf("policy: adding the rule would break the file (%v); nothing was written", err)
	}
	if !samePolicyPlus(before, after, rule) {
		return fmt.Errorf("policy: %s: the file's layout defeats a safe edit; add %q to allow by hand", file, rule)
	}
	return writeAtomic(file, out)
}

// insertAllow returns data with rule appended to the top-level allow list.
func insertAllow(data []byte, rule string) ([]byte, error) {
	q, err := yamlQuote(rule)
	if err != nil {
		return nil, err
	}
	var tree *ast.File
	err = noPanic(func() (err error) {
		tree, err = parser.ParseBytes(data, parser.ParseComments)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(tree.Docs) > 1 {
		return nil, errors.New("a policy file holds one YAML document")
	}
	var values []*ast.MappingValueNode
	if len(tree.Docs) == 1 && tree.Docs[0].Body != nil {
		switch b := tree.Docs[0].Body.(type) {
		case *ast.MappingNode:
			values = b.Values
		case *ast.MappingValueNode:
			values = []*ast.MappingValueNode{b}
		case *ast.CommentGroupNode:
		default:
			return nil, errors.New("the file is not a mapping")
		}
	}
	lines := splitLinesKeep(data)
	for i, mv := range values {
		if mv.Key.GetToken() == nil || mv.Key.GetToken().Value != "allow" {
			continue
		}
		if mv.Key.GetToken().Position.Column != 1 {
			return nil, errors.New("the top-level keys are indented")
		}
		switch v := mv.Value.(type) {
		case *ast.SequenceNode:
			if v.IsFlowStyle {
				// allow: [a, b] → insert before the closing bracket
				end := v.End
				if end == nil {
					return nil, errors.New("unterminated allow list")
				}
				off := byteOffset(lines, end.Position.Line, end.Position.Column)
				if off < 0 || off >= len(data) || data[off] != ']' {
					return nil, errors.New("cannot find the end of the allow list")
				}
				sep := ", "
				if len(v.Values) == 0 {
					sep = ""
				}
				return slices.Concat(data[:off], []byte(sep+q), data[off:]), nil
			}
			indent := v.Start.Position.Column - 1
			insertAt := len(lines) // line index to insert before
			if i+1 < len(values) {
				insertAt = values[i+1].Key.GetToken().Position.Line - 1
			}
			// step back over blank lines and comments at the top level,
			// which belong to what follows
			for insertAt > 0 {
				l := strings.TrimRight(string(lines[insertAt-1]), "\r\n")
				t := strings.TrimLeft(l, " ")
				if t == "" || strings.HasPrefix(t, "#") && len(l)-len(t) < indent {
					insertAt--
					continue
				}
				break
			}
			entry := strings.Repeat(" ", indent) + "- " + q + "\n"
			var out [][]byte
			out = append(out, lines[:insertAt]...)
			if insertAt > 0 && !bytes.HasSuffix(lines[insertAt-1], []byte("\n")) {
				entry = "\n" + entry
			}
			out = append(out, []byte(entry))
			out = append(out, lines[insertAt:]...)
			return bytes.Join(out, nil), nil
		case *ast.NullNode:
			// "allow:" with nothing after it: put the entry on the next line
			line := mv.Key.GetToken().Position.Line
			var out [][]byte
			out = append(out, lines[:line]...)
			entry := "  - " + q + "\n"
			if !bytes.HasSuffix(lines[line-1], []byte("\n")) {
				entry = "\n" + entry
			}
			out = append(out, []byte(entry))
			out = append(out, lines[line:]...)
			return bytes.Join(out, nil), nil
		default:
			return nil, errors.New("allow is not a list")
		}
	}
	// no allow list yet: add one at the end
	prefix := ""
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		prefix = "\n"
	}
	return append(slices.Clone(data), []byte(prefix+"\n# added by an \"always\" approval\nallow:\n  - "+q+"\n")...), nil
}

// yamlQuote writes s as a double-quoted YAML scalar (JSON strings are YAML).
func yamlQuote(s string) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// byteOffset converts a 1-based line and rune column into a byte offset
// (-1 when out of range).
func byteOffset(lines [][]byte, line, col int) int {
	if line < 1 || line > len(lines) || col < 1 {
		return -1
	}
	off := 0
	for _, l := range lines[:line-1] {
		off += len(l)
	}
	c := 1
	for i := range string(lines[line-1]) {
		if c == col {
			return off + i
		}
		c++
	}
	return -1
}

func splitLinesKeep(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			out = append(out, data)
			break
		}
		out = append(out, data[:i+1])
		data = data[i+1:]
	}
	return out
}

// samePolicyPlus reports whether after is before with rule appended to Allow.
func samePolicyPlus(before, after *Policy, rule string) bool {
	if !slices.Equal(append(slices.Clone(before.Allow), rule), after.Allow) {
		return false
	}
	return before.Mode == after.Mode && before.MaxLevel == after.MaxLevel &&
		slices.Equal(before.Deny, after.Deny) && slices.Equal(before.Ask, after.Ask) &&
		slices.Equal(before.Roots, after.Roots) && before.Levels == after.Levels &&
		reflect.DeepEqual(before.Roles, after.Roles) && reflect.DeepEqual(before.Principals, after.Principals) &&
		reflect.DeepEqual(before.Reasons, after.Reasons) && reflect.DeepEqual(before.Limits, after.Limits) &&
		before.Approvals == after.Approvals && reflect.DeepEqual(before.Output, after.Output) &&
		reflect.DeepEqual(before.Secrets, after.Secrets) && before.DefaultRole == after.DefaultRole &&
		reflect.DeepEqual(before.Auth, after.Auth)
}

// writeAtomic replaces file with data (atomicfile), keeping the
// original's permissions.
func writeAtomic(file string, data []byte) error {
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(file); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := atomicfile.Write(file, data, mode); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	return nil
}
