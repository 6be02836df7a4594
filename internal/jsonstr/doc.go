// Package jsonstr finds where a JSON string ends in its encoded bytes
// without decoding it: the first quote that no backslash escapes (one
// preceded by an even number of backslashes). The gateway's relay (what
// it copies of a result unread) and trust's decoder of result values
// (how much room a string needs) both ask it.
package jsonstr
