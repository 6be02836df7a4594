package schema

import (
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// This file guards against hostile schemas once they are compiled: a cycle
// of references that consumes no input, and schemas whose applicators
// multiply ({"allOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}]} nested 40
// times applies 2^40 nodes to one value). It also indexes the nodes and
// decides whether the fast validator covers the whole schema.

// walk visits every node reachable from root, records it in byLoc and
// reports whether every node stays within the fast validator's keywords.
func walk(root *jsonschema.Schema, byLoc map[string]*jsonschema.Schema) bool {
	fast := true
	seen := map[*jsonschema.Schema]bool{}
	var visit func(*jsonschema.Schema)
	visit = func(n *jsonschema.Schema) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		byLoc[n.Location] = n
		if !fastNode(n) {
			fast = false
		}
		for _, c := range inPlace(n) {
			visit(c)
		}
		for _, c := range children(n, "", false) {
			visit(c)
		}
		for _, c := range n.Properties {
			visit(c)
		}
	}
	visit(root)
	return fast
}

// fastNode reports whether the fast validator (fast.go) implements every
// keyword of n exactly.
func fastNode(n *jsonschema.Schema) bool {
	if n.Bool != nil {
		return true
	}
	_, itemList := n.Items.([]*jsonschema.Schema)
	return n.RecursiveRef == nil && !n.RecursiveAnchor && n.DynamicRef == nil &&
		n.If == nil && n.Then == nil && n.Else == nil && n.Format == nil &&
		n.PropertyNames == nil && len(n.PatternProperties) == 0 &&
		len(n.Dependencies) == 0 && len(n.DependentRequired) == 0 && len(n.DependentSchemas) == 0 &&
		n.UnevaluatedProperties == nil && n.UnevaluatedItems == nil &&
		!n.UniqueItems && n.Contains == nil && n.MinContains == nil && n.MaxContains == nil &&
		len(n.PrefixItems) == 0 && !itemList && n.AdditionalItems == nil &&
		n.ContentEncoding == nil && n.ContentMediaType == nil && n.ContentSchema == nil &&
		len(n.Extensions) == 0
}

// inPlace lists the schemas that apply to the same value as n, with
// repetition (allOf:[A, A] lists A twice).
func inPlace(n *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(c ...*jsonschema.Schema) {
		for _, s := range c {
			if s != nil {
				out = append(out, s)
			}
		}
	}
	add(n.Ref, n.RecursiveRef, n.Not, n.If, n.Then, n.Else)
	if n.DynamicRef != nil {
		add(n.DynamicRef.Ref)
	}
	add(n.AllOf...)
	add(n.AnyOf...)
	add(n.OneOf...)
	for _, c := range n.DependentSchemas {
		add(c)
	}
	for _, c := range n.Dependencies {
		if s, ok := c.(*jsonschema.Schema); ok {
			add(s)
		}
	}
	return out
}

// children lists the schemas that may apply to the member named key of an
// object value of n, or to any item of an array value (an over-estimate
// where it matters: it is only used for bounds). wildcard means a key that
// n does not name.
func children(n *jsonschema.Schema, key string, named bool) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(c ...*jsonschema.Schema) {
		for _, s := range c {
			if s != nil {
				out = append(out, s)
			}
		}
	}
	if p, ok := n.Properties[key]; named && ok {
		add(p)
	} else if a, ok := n.AdditionalProperties.(*jsonschema.Schema); ok {
		add(a)
	}
	for _, p := range n.PatternProperties {
		add(p)
	}
	add(n.PropertyNames, n.UnevaluatedProperties, n.Items2020, n.Contains, n.UnevaluatedItems, n.ContentSchema)
	switch it := n.Items.(type) {
	case *jsonschema.Schema:
		add(it)
	case []*jsonschema.Schema:
		add(it...)
	}
	if a, ok := n.AdditionalItems.(*jsonschema.Schema); ok {
		add(a)
	}
	add(n.PrefixItems...)
	return out
}

// checkFanOut refuses in-place reference cycles and schemas that would
// apply more than MaxFanOut nodes to one location of a value at most
// MaxArgumentDepth deep.
func checkFanOut(root *jsonschema.Schema) error {
	// Number the nodes.
	ids := map[*jsonschema.Schema]int{}
	var nodes []*jsonschema.Schema
	var number func(*jsonschema.Schema)
	number = func(n *jsonschema.Schema) {
		if _, ok := ids[n]; ok {
			return
		}
		ids[n] = len(nodes)
		nodes = append(nodes, n)
		for _, c := range inPlace(n) {
			number(c)
		}
		for _, c := range children(n, "", false) {
			number(c)
		}
		for _, c := range n.Properties {
			number(c)
		}
	}
	number(root)

	// exp[i]: how often each node applies in place at node i's location.
	exp := make([]map[int]int, len(nodes))
	state := make([]byte, len(nodes)) // 0 new, 1 in progress, 2 done
	var expand func(i int) error
	expand = func(i int) error {
		switch state[i] {
		case 1:
			return fmt.Errorf("the reference cycle at %s never consumes any input", nodes[i].Location)
		case 2:
			return nil
		}
		state[i] = 1
		m := map[int]int{i: 1}
		for _, c := range inPlace(nodes[i]) {
			j := ids[c]
			if err := expand(j); err != nil {
				return err
			}
			for k, v := range exp[j] {
				m[k] = min(m[k]+v, MaxFanOut+1)
			}
		}
		total := 0
		for _, v := range m {
			total += v
		}
		if total > MaxFanOut {
			return fmt.Errorf("%s applies more than %d schemas to one value", nodes[i].Location, MaxFanOut)
		}
		exp[i], state[i] = m, 2
		return nil
	}
	for i := range nodes {
		if err := expand(i); err != nil {
			return err
		}
	}

	// g[i] bounds how many nodes apply to one location within d levels
	// below a value of node i; iterate d until nothing changes. h[t] is the
	// most that node t alone passes to one member or item (its worst key);
	// summing h over the nodes at a location over-estimates, never under.
	g := make([]int, len(nodes))
	for i := range nodes {
		for _, v := range exp[i] {
			g[i] += v
		}
	}
	h := make([]int, len(nodes))
	next := make([]int, len(nodes))
	sum := func(cs []*jsonschema.Schema) int {
		total := 0
		for _, c := range cs {
			total = min(total+g[ids[c]], MaxFanOut+1)
		}
		return total
	}
	for range MaxArgumentDepth {
		for t, n := range nodes {
			best := sum(children(n, "", false))
			for k := range n.Properties {
				best = max(best, sum(children(n, k, true)))
			}
			h[t] = best
		}
		changed := false
		for i := range nodes {
			total := 0
			for t, cnt := range exp[i] {
				total = min(total+cnt*h[t], MaxFanOut+1)
			}
			best := max(g[i], total)
			if best > MaxFanOut {
				return fmt.Errorf("%s applies more than %d schemas to one nested value", nodes[i].Location, MaxFanOut)
			}
			next[i] = best
			changed = changed || best != g[i]
		}
		g, next = next, g
		if !changed {
			break
		}
	}
	return nil
}
