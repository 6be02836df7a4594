package exec

import (
	"strings"
	"unicode/utf8"
)

// whole returns how many bytes of b make whole characters: a UTF-8
// sequence cut at the end of b is left for the next read, unless it is
// all there is (or more is never coming), so that text never splits a
// character across two reads.
func whole(b []byte, final bool) int {
	if final || len(b) == 0 {
		return len(b)
	}
	for back := 1; back <= utf8.UTFMax && back <= len(b); back++ {
		c := b[len(b)-back]
		if c < utf8.RuneSelf { // ASCII: nothing is cut
			return len(b)
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-back:]) && back < len(b) {
				return len(b) - back
			}
			return len(b)
		}
	}
	return len(b)
}

// screenText turns what a program wrote to a terminal into the text a
// person would read: colour, cursor and other escape sequences (CSI, OSC,
// two-byte escapes) are removed, "\r\n" is a line end, a carriage return
// within a line starts it again (a progress bar keeps its last state), a
// backspace removes the character before it, and other control bytes but
// tab go. It returns the text and how many bytes of b it used: an escape
// sequence cut at the end of b is left for the next read unless final.
func screenText(b []byte, final bool) (string, int) {
	var out strings.Builder
	var line []byte // the current line, rewritten after a \r
	col := 0        // the cursor's byte offset in line
	put := func(c []byte) {
		if col < len(line) {
			// Overwrite as a terminal does, one character at a time.
			end := col
			for n := 0; n < utf8.RuneCount(c) && end < len(line); n++ {
				_, size := utf8.DecodeRune(line[end:])
				end += size
			}
			line = append(line[:col], append(append([]byte(nil), c...), line[end:]...)...)
		} else {
			line = append(line, c...)
		}
		col += len(c)
	}
	i := 0
	for i < len(b) {
		c := b[i]
		switch {
		case c == 0x1b:
			n := escapeLen(b[i:])
			if n == 0 { // cut: wait for the rest
				if !final {
					out.Write(line)
					return out.String(), i
				}
				n = len(b) - i
			}
			i += n
		case c == '\n':
			out.Write(line)
			out.WriteByte('\n')
			line, col = line[:0], 0
			i++
		case c == '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				i++ // \r\n: the \n ends the line
				continue
			}
			col = 0
			i++
		case c == '\b':
			if col > 0 {
				_, size := utf8.DecodeLastRune(line[:col])
				col -= size
			}
			i++
		case c == '\t':
			put([]byte{'\t'})
			i++
		case c < 0x20 || c == 0x7f:
			i++
		default:
			_, size := utf8.DecodeRune(b[i:])
			put(b[i : i+size])
			i += size
		}
	}
	out.Write(line)
	return out.String(), i
}

// escapeLen returns the length of the escape sequence at the start of b
// (b[0] is ESC), or 0 when b ends before it does.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '[': // CSI: parameters and intermediates, then a final byte
		for i := 2; i < len(b); i++ {
			if b[i] >= 0x40 && b[i] <= 0x7e {
				return i + 1
			}
		}
		return 0
	case ']', 'P', '_', '^', 'X': // OSC, DCS…: to BEL or ESC \
		for i := 2; i < len(b); i++ {
			if b[i] == 0x07 {
				return i + 1
			}
			if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\' {
				return i + 2
			}
		}
		return 0
	case '(', ')', '*', '+', '#', '%': // charset and similar: one more byte
		if len(b) < 3 {
			return 0
		}
		return 3
	}
	return 2
}
