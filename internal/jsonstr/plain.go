package jsonstr

import "math/bits"

// Plain returns the index of the first byte of s that a JSON string does
// not hold as it is (a control character, '"', '\\' or a byte outside
// ASCII: one an encoder escapes or a decoder looks at), len(s) when there
// is none. It reads eight bytes at a time.
func Plain[T string | []byte](s T) int {
	i := 0
	for ; len(s)-i >= 8; i += 8 {
		if bad := notPlain(load64(s[i:])); bad != 0 {
			return i + bits.TrailingZeros64(bad)>>3
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return i
		}
	}
	return i
}

// IsPlain reports whether Plain(s) is len(s), in fewer steps: eight bytes
// at a time, the last eight overlapping the ones before when the length is
// not a multiple of eight, and a string of four to seven bytes in one word.
func IsPlain[T string | []byte](s T) bool {
	if len(s) < 8 {
		if len(s) >= 4 { // the first four and the last four, in one word
			return notPlain(load32(s)|load32(s[len(s)-4:])<<32) == 0
		}
		return Plain(s) == len(s)
	}
	var bad uint64
	for i := 0; len(s)-i > 8; i += 8 {
		bad |= notPlain(load64(s[i:]))
	}
	return bad|notPlain(load64(s[len(s)-8:])) == 0
}

// Word tests over eight bytes, the first the lowest (load64): each sets
// the high bit of every byte that is (for its kind), and perhaps of later
// ones (a borrow carries only past a byte that is), never of an earlier
// one, so the lowest bit set marks the first such byte and a zero says
// there is none.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// less marks the bytes of x below n (n <= 0x80).
func less(x uint64, n byte) uint64 { return (x - ones*uint64(n)) &^ x & highs }

// equal marks the bytes of x equal to c.
func equal(x uint64, c byte) uint64 { return less(x^(ones*uint64(c)), 1) }

// notPlain marks the bytes of x that are not plain: control characters,
// '"', '\\' and bytes outside ASCII.
func notPlain(x uint64) uint64 {
	return less(x, 0x20) | equal(x, '"') | equal(x, '\\') | x&highs
}

// load32 reads the first four bytes of s, the first the lowest.
func load32[T string | []byte](s T) uint64 {
	_ = s[3]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
}

// load64 reads the first eight bytes of s, the first the lowest (one load
// on amd64 and arm64).
func load64[T string | []byte](s T) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
