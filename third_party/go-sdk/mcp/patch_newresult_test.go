// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import (
	"reflect"
	"testing"
)

// PATCH(toolgate): patch 41. newMethodInfo's newResult makes a tools/call's
// result with new(CallToolResult) instead of reflection. These tests check
// that every method's newResult gives what v1.8.0's gave: a new zero value
// of the method's result type (newResultV180), one per call.

// newResultV180 is v1.8.0's newResult of a method whose result type is R.
func newResultV180[R Result]() Result {
	return reflect.New(reflect.TypeFor[R]().Elem()).Interface().(R)
}

// TestNewResultMatchesV180: for every method a client or server sends
// (the infos' newResult: tools/call's and all others), the result is a new
// zero value of its type, as v1.8.0's reflection made (a method whose
// result type is the interface Result panics, as in v1.8.0, where nothing
// calls it); tools/call's is a *CallToolResult, v1.8.0's value, new at each
// call.
func TestNewResultMatchesV180(t *testing.T) {
	check := func(t *testing.T, name string, newResult func() Result) {
		t.Helper()
		if newResult == nil {
			return // a notification
		}
		var a Result
		func() {
			defer func() { recover() }()
			a = newResult()
		}()
		if a == nil {
			return // v1.8.0's reflection of an interface type panics too
		}
		want := reflect.New(reflect.TypeOf(a).Elem()).Interface()
		if !reflect.DeepEqual(a, want) {
			t.Errorf("%s: newResult() = %#v, want the zero %T", name, a, want)
		}
	}
	n := 0
	for name, mi := range serverMethodInfos { // what a client sends
		check(t, "server's "+name, mi.newResult)
		n++
	}
	for name, mi := range clientMethodInfos { // what a server sends
		check(t, "client's "+name, mi.newResult)
		n++
	}
	if n == 0 {
		t.Fatal("no method infos")
	}
	mi := serverMethodInfos[methodCallTool]
	got := mi.newResult()
	if _, ok := got.(*CallToolResult); !ok {
		t.Fatalf("tools/call's newResult() is a %T, want *CallToolResult", got)
	}
	if reflect.ValueOf(got).Pointer() == reflect.ValueOf(mi.newResult()).Pointer() {
		t.Error("two calls of tools/call's newResult gave one value")
	}
	if want := newResultV180[*CallToolResult](); !reflect.DeepEqual(got, want) || reflect.TypeOf(got) != reflect.TypeOf(want) {
		t.Errorf("tools/call's newResult() = %#v, v1.8.0's %#v", got, want)
	}
	// The types of other methods are still reflection's.
	if got, want := serverMethodInfos[methodListTools].newResult(), newResultV180[*ListToolsResult](); !reflect.DeepEqual(got, want) {
		t.Errorf("tools/list's newResult() = %#v, v1.8.0's %#v", got, want)
	}
}

// TestNewResultAllocs: tools/call's newResult makes one allocation (the
// result), as reflection did.
func TestNewResultAllocs(t *testing.T) {
	newResult := serverMethodInfos[methodCallTool].newResult
	var sink Result
	if n := testing.AllocsPerRun(100, func() { sink = newResult() }); n != 1 {
		t.Errorf("newResult of tools/call: %v allocations, want 1", n)
	}
	_ = sink
}
