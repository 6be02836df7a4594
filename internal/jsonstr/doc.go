// Package jsonstr reads JSON strings in their encoded bytes. End finds
// where a string ends without decoding it: the first quote that no
// backslash escapes (one preceded by an even number of backslashes); the
// gateway's relay (what it copies of a result unread) and trust's decoder
// of result values (how much room a string needs) both ask it. Plain and
// IsPlain find the bytes a string holds as they are (no control byte,
// quote, backslash or byte outside ASCII), eight at a time: the audit
// log's encoder copies them without a look, and schema's decoder of
// arguments skips them.
package jsonstr
