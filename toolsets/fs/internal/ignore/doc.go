// Package ignore decides which paths a .gitignore file excludes, with git's
// own rules: blank lines and "#" comments are skipped, "\#" and "\!" escape
// those characters, trailing spaces are dropped unless escaped, "!" re-includes,
// a trailing "/" matches directories only, a "/" at the start or in the middle
// anchors the pattern to the folder of its .gitignore (otherwise the pattern
// matches a name at any depth), "*", "?", "[...]" (with ranges, "!"/"^"
// negation and [:class:] names) never match "/", and "**" spans folders in
// "**/x", "x/**" and "x/**/y". Rules of a deeper .gitignore take precedence
// over those of a shallower one, and within one file the last matching rule
// wins. A path inside an excluded directory is excluded, and cannot be
// re-included (git does not descend into it either). Entries named ".git" are
// always excluded.
//
// A walker parses the .gitignore of each folder it enters (Parse) and pushes
// the rules onto the Matcher of the parent folder (Push), which returns a new
// Matcher and leaves the parent's unchanged, so concurrent walkers can share
// them.
//
// Patterns are compiled to RE2 regular expressions (or to plain string
// comparisons when they have no wildcard), so matching time is linear in the
// length of the path whatever the pattern. One known difference from git:
// "?" and a bracket expression match one character (a UTF-8 sequence) where
// git matches one byte. Written by hand: no maintained Go library implements
// git's nested-file semantics on slash paths without touching the disk.
package ignore
