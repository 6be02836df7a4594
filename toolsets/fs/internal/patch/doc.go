// Package patch parses and applies the "*** Begin Patch" format that OpenAI's
// Codex agents write (the apply_patch tool), as pure functions over strings:
// reading and writing the files, all of them or none, is the caller's job.
//
// The grammar, as Codex defines it:
//
//	patch       := "*** Begin Patch" NL op+ "*** End Patch" NL?
//	op          := add | delete | update
//	add         := "*** Add File: " path NL ("+" line NL)*
//	delete      := "*** Delete File: " path NL
//	update      := "*** Update File: " path NL ("*** Move to: " path NL)? hunk+
//	hunk        := ("@@" | "@@ " context) NL change+ ("*** End of File" NL)?
//	change      := (" " | "-" | "+") line NL
//
// Like Codex, Parse is lenient where models are sloppy: markers may carry
// surrounding spaces, the whole patch may be wrapped in a <<'EOF' heredoc,
// the first hunk of an update may omit its "@@" line, a blank line inside a
// hunk is an empty context line, and CRLF line endings are accepted.
//
// ApplyHunks locates each hunk the way Codex does: after the hunk's "@@"
// context line if it has one, and after the previous hunk, trying an exact
// match first, then ignoring trailing whitespace, then ignoring surrounding
// whitespace, then also treating typographic dashes, quotes and spaces as
// their ASCII forms. "*** End of File" anchors a hunk at the end. A file with
// CRLF line endings keeps them. One deliberate difference: a hunk that only
// adds lines is inserted right after its "@@" context line when it has one
// (Codex appends it at the end of the file).
package patch
