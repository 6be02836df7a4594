package exec

import (
	"strings"
	"sync"
)

// An optionSpec is what a program's command line accepts, so that an
// exemption (a dry run, --cached) is granted only by an option the
// program will really see as one, never by the value of another option
// (git clean -e -n, rsync --exclude -n), an operand after -- or a word
// computed at run time.
type optionSpec struct {
	short      string          // letters of the short options that take no value
	shortValue string          // letters of the short options that take one (-eX, -e X)
	long       map[string]bool // long options (true: takes a value, --x=v or --x v)
	alias      map[byte]string // the long name of a short option
	abbrev     bool            // a unique prefix of a long option stands for it (git)
}

// parsedOptions is what parseOptions found: the options given (by long
// name, or "-x" for a short one without one; a --no-x given later unsets
// x), the operands, and whether every word was understood.
type parsedOptions struct {
	set      map[string]bool
	operands []string
	known    bool
}

// parseOptions reads args as the program does: short options cluster
// (-fdx), a short option that takes a value takes the rest of its
// cluster or the next word, long options take a value after = or in the
// next word, -- ends the options, options may follow operands. An unknown
// option, or a word computed at run time (it may be an option that takes
// the next word), makes the result unknown: the caller then grants no
// exemption.
func parseOptions(args []string, s optionSpec) parsedOptions {
	p := parsedOptions{set: map[string]bool{}, known: true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || s.abbrev && a == "--end-of-options":
			p.operands = append(p.operands, args[i+1:]...)
			return p
		case a == "" || a == manyNames:
			p.known = false
			p.operands = append(p.operands, a)
		case strings.HasPrefix(a, "--"):
			name, _, attached := strings.Cut(a[2:], "=")
			full, on := s.longName(name), true
			if n, ok := strings.CutPrefix(name, "no-"); full == "" && ok {
				if full = s.longName(n); s.long[full] {
					full = "" // only an option without a value has a --no- form
				}
				on = false
			}
			if full == "" {
				p.known = false
				continue
			}
			if s.long[full] && !attached {
				i++
			}
			p.set[full] = on
		case len(a) > 1 && a[0] == '-':
			for k := 1; k < len(a); k++ {
				name := s.alias[a[k]]
				if name == "" {
					name = "-" + a[k:k+1]
				}
				if strings.IndexByte(s.shortValue, a[k]) >= 0 {
					p.set[name] = true
					if k == len(a)-1 {
						i++
					}
					break
				}
				if strings.IndexByte(s.short, a[k]) < 0 {
					p.known = false
					continue
				}
				p.set[name] = true
			}
		default:
			p.operands = append(p.operands, a)
		}
	}
	return p
}

// longName returns the long option name stands for ("" if none).
func (s optionSpec) longName(name string) string {
	if _, ok := s.long[name]; ok {
		return name
	}
	if !s.abbrev || name == "" {
		return ""
	}
	found := ""
	for l := range s.long {
		if strings.HasPrefix(l, name) {
			if found != "" {
				return "" // ambiguous
			}
			found = l
		}
	}
	return found
}

// longOptions makes a long-option table of names; a name ending in =
// takes a value.
func longOptions(names string) map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(names) {
		n, value := strings.CutSuffix(n, "=")
		m[n] = value
	}
	return m
}

// The options of the commands whose exemptions depend on them, made on
// first use.
var (
	gitCleanOptions = sync.OnceValue(func() optionSpec {
		return optionSpec{short: "dfinqxX", shortValue: "e", abbrev: true,
			long:  longOptions("force dry-run quiet interactive exclude="),
			alias: map[byte]string{'f': "force", 'n': "dry-run", 'q': "quiet", 'i': "interactive", 'e': "exclude"}}
	})
	gitRmOptions = sync.OnceValue(func() optionSpec {
		return optionSpec{short: "fnrq", abbrev: true,
			long:  longOptions("force dry-run cached ignore-unmatch sparse quiet pathspec-from-file= pathspec-file-nul"),
			alias: map[byte]string{'f': "force", 'n': "dry-run", 'q': "quiet"}}
	})
	gitRestoreOptions = sync.OnceValue(func() optionSpec {
		return optionSpec{short: "pWSqm", shortValue: "s", abbrev: true,
			long: longOptions("source= patch worktree staged quiet progress ours theirs merge conflict= ignore-unmerged " +
				"ignore-skip-worktree-bits recurse-submodules overlay pathspec-from-file= pathspec-file-nul"),
			alias: map[byte]string{'p': "patch", 'W': "worktree", 'S': "staged", 'q': "quiet", 'm': "merge", 's': "source"}}
	})
	rsyncOptions = sync.OnceValue(func() optionSpec {
		return optionSpec{short: "vqcarRbuldLkKHpEAXogDtUNOJSnWxCFzyimPhIs04689V", shortValue: "BefTM@",
			long: longOptions("verbose quiet no-motd checksum archive recursive relative implied-dirs backup update inplace " +
				"append append-verify dirs old-dirs mkpath links copy-links copy-unsafe-links safe-links munge-links " +
				"copy-dirlinks keep-dirlinks hard-links perms executability acls xattrs owner group devices copy-devices " +
				"write-devices specials times atimes open-noatime crtimes omit-dir-times omit-link-times super fake-super " +
				"sparse preallocate dry-run whole-file one-file-system existing ignore-non-existing ignore-existing " +
				"remove-source-files remove-sent-files del delete delete-before delete-during delete-delay delete-after " +
				"delete-excluded ignore-missing-args delete-missing-args ignore-errors force force-delete partial " +
				"delay-updates prune-empty-dirs numeric-ids ignore-times size-only fuzzy compress cvs-exclude from0 " +
				"old-args secluded-args protect-args trust-sender blocking-io stats 8-bit-output human-readable progress " +
				"itemize-changes list-only ipv4 ipv6 inc-recursive i-r fsync msgs2stderr " +
				"info= debug= stderr= backup-dir= suffix= chmod= usermap= groupmap= chown= copy-as= block-size= rsh= " +
				"rsync-path= max-delete= max-size= min-size= max-alloc= partial-dir= timeout= contimeout= modify-window= " +
				"temp-dir= compare-dest= copy-dest= link-dest= compress-choice= zc= compress-level= zl= skip-compress= " +
				"checksum-choice= cc= checksum-seed= filter= exclude= exclude-from= include= include-from= files-from= " +
				"address= port= sockopts= out-format= log-format= log-file= log-file-format= password-file= early-input= " +
				"bwlimit= stop-after= time-limit= stop-at= write-batch= only-write-batch= read-batch= protocol= iconv= " +
				"remote-option= outbuf="),
			alias: map[byte]string{'n': "dry-run"}}
	})
)
