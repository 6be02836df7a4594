package policy_test

import "testing"

// BenchmarkDecide measures a decision on each kind of call under the
// default deny rules plus a few of each kind.
func BenchmarkDecide(b *testing.B) {
	p := pol([]string{"Bash(rm:*)", "WebFetch(domain:*.evil.test)"}, []string{"Bash(git push:*)"}, []string{"Bash(npm run test:*)", "Bash(git status)", "Edit(src/**)", "WebFetch(domain:example.com)"})
	for _, bc := range []struct {
		name string
		run  func()
	}{
		{"no-args-tool", func() { p.Decide(defGH, pcallRaw(defGH, `{"title":"x"}`)) }},
		{"read_file", func() { p.Decide(defRead, pcallRaw(defRead, `{"path":"src/main.go"}`)) }},
		{"write_file", func() { p.Decide(defWrite, pcallRaw(defWrite, `{"path":"src/main.go","content":"x"}`)) }},
		{"command", func() { p.Decide(defCmd, pcallRaw(defCmd, `{"command":"npm run test -- --watch && git status"}`)) }},
		{"http", func() { p.Decide(defHTTP, pcallRaw(defHTTP, `{"url":"https://example.com/a"}`)) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.run()
			}
		})
	}
}
