// Package search is the engine behind the search_files tool: a regular
// expression over the lines of files, or a glob over their paths, in a folder
// opened as an os.Root, so every open stays confined to the root.
//
// It honours .gitignore files (see package ignore) and skips hidden names,
// binary files (a NUL byte in the first 8 KiB) and files over a size limit.
// Results come back in a deterministic order (by path, then line) and are
// paginated with Offset and Limit; Total says how many there were in all.
//
// It is built for speed: a pool of GOMAXPROCS workers lists folders and
// searches files at once; each folder is opened once as its own os.Root, so
// a file opens with one system call; a file is read whole into a buffer the
// worker reuses; a literal that every match must contain is taken from the
// regular expression and found with bytes.Index (or, ignoring case, by its
// rarest byte in both cases), and the regular expression runs only on the
// lines that contain it; line numbers are counted only in files with a
// match. Matching is line by line: a match never spans lines.
package search
