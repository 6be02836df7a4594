// Package registry holds the tools a program offers: it registers them under
// unique names, looks them up, lists them in a stable order, enables and
// disables them, groups them by tag into tool sets, and tells subscribers
// when the list changes (MCP's tools/list_changed is built on that).
//
// Lookups read an immutable snapshot, so they never wait for a writer and
// scale across goroutines.
package registry
