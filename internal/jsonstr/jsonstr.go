package jsonstr

import "bytes"

// End returns the index in b of the quote that closes a JSON string of b,
// reading from i, which is past the string's opening quote and not past
// its closing one; len(b) when the string does not close. The opening quote
// ends the count of backslashes before a quote, so b needs no bound
// check there.
func End(b []byte, i int) int {
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b)
		}
		i += q
		n := 0 // backslashes right before the quote
		for b[i-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return i
		}
		i++
	}
}
