package fs

// Options tune the file tools. The zero value is the safe default.
type Options struct {
	// Rules are the protected paths; nil means DefaultRules(). An empty,
	// non-nil slice protects nothing.
	Rules []Rule
	// AllowSecrets lists globs (same syntax and matching as Rule.Pattern)
	// of secret files the tools may nevertheless read and write.
	AllowSecrets []string
	// AllowHardLinks lets the tools read and change a regular file that has
	// other hard links. By default they refuse: such a file may be a second
	// name of a file outside the roots (os.Root allows it), whose content
	// reading would show and writing would change. Projects made of hard
	// links (pnpm's node_modules) need it.
	AllowHardLinks bool
	// MaxFileBytes caps the size of a file that read_file scans (it streams,
	// so this only bounds the time spent); default 4 GiB.
	MaxFileBytes int64
	// MaxEditBytes caps the size of a file that edit_file, apply_patch and
	// write_file hold in memory; default 32 MiB.
	MaxEditBytes int64
	// MaxOutputBytes caps the text read_file returns at once; default 256 KiB.
	MaxOutputBytes int
	// MaxEntries caps the entries list_directory returns; default 1000.
	MaxEntries int
	// Parallel, when set, is called as work that runs on several
	// goroutines at once (search_files) starts, and what it returns as that
	// work ends: a program that runs on one processor gives the others
	// back for the while (toolgate serve over stdio: internal/procs.Widen).
	Parallel func() (done func())
}

func (o Options) withDefaults() Options {
	if o.Rules == nil {
		o.Rules = DefaultRules()
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 4 << 30
	}
	if o.MaxEditBytes <= 0 {
		o.MaxEditBytes = 32 << 20
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = 256 << 10
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 1000
	}
	return o
}
