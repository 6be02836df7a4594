package fs

import (
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/tool"
)

// Bounds on a path, checked on exactly the bytes received.
const (
	MaxPathBytes      = 4096 // a whole path
	MaxComponentBytes = 255  // one name between separators
)

// checkPath rejects a path that is empty, too long, not UTF-8, or holds a
// character that has no business in a file name: NUL and other control
// characters, and the invisible or direction-changing characters (bidi
// overrides, zero-width spaces) that make a name read differently from what
// it is. Nothing is trimmed, expanded (no "~", no $VAR) or decoded.
func checkPath(p string) *tool.Error {
	if p == "" {
		return tool.Errorf(tool.InvalidArguments, "the path is empty").
			WithSuggestion("give a path relative to the workspace root, e.g. \"src/main.go\", or \".\" for the root")
	}
	if len(p) > MaxPathBytes {
		return tool.Errorf(tool.InvalidArguments, "the path is %d bytes long; at most %d are allowed", len(p), MaxPathBytes).
			WithSuggestion("use a shorter path")
	}
	if !utf8.ValidString(p) {
		return tool.Errorf(tool.InvalidArguments, "the path is not valid UTF-8").
			WithSuggestion("send the path as plain UTF-8 text")
	}
	for i, r := range p {
		if badRune(r) {
			return tool.Errorf(tool.InvalidArguments, "the path holds the character %U at byte %d, which is not allowed in a path (control, invisible or text-direction character)", r, i).
				WithSuggestion("remove that character; write the path exactly as the file is named, in plain characters").
				WithDetail("character", r)
		}
	}
	for _, c := range strings.Split(p, "/") {
		if len(c) > MaxComponentBytes {
			return tool.Errorf(tool.InvalidArguments, "a name in the path is %d bytes long; at most %d are allowed", len(c), MaxComponentBytes).
				WithSuggestion("use shorter file and folder names")
		}
	}
	return nil
}

// badRune reports whether r is refused in a path.
func badRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f: // C0, DEL, C1 controls
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, // Arabic letter mark, LRM, RLM
		r >= 0x202a && r <= 0x202e, // LRE, RLE, PDF, LRO, RLO
		r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	case r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff, r == 0x180e: // zero-width characters
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	case r == utf8.RuneError: // U+FFFD stands for bytes that were not text
		return true
	}
	return false
}
