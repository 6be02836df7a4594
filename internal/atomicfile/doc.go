// Package atomicfile replaces a file's content all at once: a reader sees
// the old content or the new, never a part, and a crash or a full disk
// leaves the old one. Write and WriteFunc write a temporary file in the
// same folder (".NAME.tmp-RANDOM"), sync it, give it the mode asked
// (whatever the umask), rename it over the file, then sync the folder.
// An error in syncing the folder (opening it included) is returned,
// though the file is already replaced by then; but EINVAL, Linux's answer
// for a file system that has no fsync for folders (nothing more can be
// done there), is not an error. Windows syncs no folder. On
// any error before the rename the file is untouched and the temporary
// file removed. A file that is a link is replaced by a regular file: the
// link is not followed, its target is left as it was. The folder must
// exist; a folder in the place of the file is an error.
package atomicfile
