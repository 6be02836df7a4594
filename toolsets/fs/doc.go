// Package fs is toolgate's built-in file tool set: read_file, write_file,
// edit_file, list_directory, get_file_info, create_directory, move_file and
// delete_file (plus search_files and apply_patch), confined to a set of root
// folders so that an agent needs no shell for files.
//
// Confinement is the part that must never fail. Roots holds one *os.Root per
// root folder. A path is checked on exactly the bytes received (no trimming,
// no "~" or $VAR expansion, no URL decoding; NUL, control, invisible and
// text-direction characters, over-long paths and names are refused), then
// resolved one component at a time through the root (Lstat, Readlink): ".."
// may not climb above the root, symbolic links are followed only while they
// stay inside it (absolute links never) and at most MaxLinks of them per
// path (os.Root's limit; more, or a loop, is an ELOOP invalid_arguments
// error naming the path), and a relative path belongs to the first root
// while an absolute one must lie, component by component, inside some root.
// Files are then opened through the root's *os.Root, and on Linux
// re-checked by their real path (/proc/self/fd), so a link swapped mid-call
// cannot lead outside. read_file has a shorter way on Linux ≥ 5.6 for a
// path already canonical and not protected as written: the type of what it
// names (fstatat, so that only a regular file is opened), openat2 beneath
// the root's handle through no symbolic link at all (RESOLVE_BENEATH,
// RESOLVE_NO_SYMLINKS: the kernel checks it atomically with the open) and
// fstat of the open file (the same file, regular, one link); anything else,
// including a path through a link, takes the walk, which answers as always. FIFOs, sockets and devices are described but never
// opened. A regular file with other hard links may be a second name of a
// file outside the roots, which os.Root allows: it is neither read nor
// changed (its link count is taken from the opened file itself), only
// described, listed and found by name, unless Options.AllowHardLinks. Link
// counts are read on every Unix; on Windows a FileInfo carries none, so
// hard links are not detected there.
//
// Every path-like argument is confined, not only the paths: a glob of
// search_files (glob, or pattern with target=files) that names a place
// outside the searched folder — a ".." segment in any spelling or brace
// alternative, an absolute pattern elsewhere, "~" or a variable — is
// refused with invalid_arguments naming the argument, never matched
// against nothing; an absolute glob inside the searched folder is made
// relative to it. A glob is bounded before its {a,b} groups are expanded
// (no longer than a path, at most 64 groups nested 32 deep, 1024
// alternatives and 1 MiB of expansion), so checking one costs little
// whatever it holds.
//
// Protected paths (Rule, DefaultRules) are denied even inside a root: git
// hooks and configuration, toolgate's own files, shell start-up files, the
// settings and instruction files of editors and coding agents (the
// policy's ConfigPaths: .vscode/, .claude/, .cursor/, AGENTS.md, …; those
// at the top of the workspace the command sandbox also keeps read-only, and
// it removes one a command creates), and secrets (.env files,
// private keys, credential stores; Options.AllowSecrets lifts those for
// chosen paths). CI definitions (policy.CIPaths: .github/workflows,
// .gitlab-ci.yml, Jenkinsfile, …) are Ask rules: the policy in front asks
// before a call that names one, and the tools refuse to reach one without
// naming it (through a link, or inside a folder moved or deleted whole). Every denial is a *tool.Error (permission_denied or
// invalid_arguments) with a suggestion, and leaves the disk unchanged.
//
// Writes are atomic: new content goes to a temporary file (named with
// TempPrefix) beside the target, is synced, and renamed over it, keeping the
// file's permissions; a file changed or replaced by something else between
// reading and writing back is not overwritten. The tools never show their
// temporary files.
//
// Register the tools with Tools (or New and Set.Tools):
//
//	roots, err := fs.OpenRoots(dirs...) // e.g. the --root flags; the first is the default
//	if err != nil { ... }
//	defer roots.Close()
//	tools, err := fs.Tools(roots, fs.Options{})
//
// Every tool's Run checks its own arguments (unknown parameters included),
// so it is safe to call without the engine in front of it.
package fs
