package schema

import (
	"encoding/json"
	"testing"
)

const benchSchema = `{"type":"object","properties":{
	"path":{"type":"string","minLength":1},
	"count":{"type":"integer","minimum":1,"maximum":100},
	"mode":{"type":"string","enum":["read","write"]}},
	"required":["path"],"additionalProperties":false}`

var benchArgs = []byte(`{"path":"src/main.go","count":10,"mode":"read"}`)

func mustCompile(tb testing.TB, raw string) *Schema {
	tb.Helper()
	s, err := Compile(json.RawMessage(raw))
	if err != nil {
		tb.Fatalf("Compile(%s): %v", raw, err)
	}
	return s
}

func BenchmarkParseArguments(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseArguments(benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateSmall(b *testing.B) {
	s := mustCompile(b, benchSchema)
	args, _ := ParseArguments(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		if errs := s.Validate(args); errs != nil {
			b.Fatal(errs)
		}
	}
}

// BenchmarkValidateSmallFull is the same call through the full validator,
// for comparison with the fast path.
func BenchmarkValidateSmallFull(b *testing.B) {
	s := mustCompile(b, benchSchema)
	args, _ := ParseArguments(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.root.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateEmpty(b *testing.B) {
	s := mustCompile(b, `{"type":"object","properties":{"verbose":{"type":"boolean"}}}`)
	args := map[string]any{}
	b.ReportAllocs()
	for b.Loop() {
		if errs := s.Validate(args); errs != nil {
			b.Fatal(errs)
		}
	}
}

func BenchmarkRepairNoop(b *testing.B) {
	s := mustCompile(b, benchSchema)
	args, _ := ParseArguments(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		if _, reps := s.Repair(args); reps != nil {
			b.Fatal(reps)
		}
	}
}

// BenchmarkArgumentsPipeline is what the engine does per call.
func BenchmarkArgumentsPipeline(b *testing.B) {
	s := mustCompile(b, benchSchema)
	b.ReportAllocs()
	for b.Loop() {
		args, repairable, err := s.ParseArguments(benchArgs)
		if err != nil {
			b.Fatal(err)
		}
		if repairable {
			args, _ = s.Repair(args)
		}
		if errs := s.Validate(args); errs != nil {
			b.Fatal(errs)
		}
	}
}

// BenchmarkArgumentsPipelineOld is BenchmarkArgumentsPipeline with the
// code before session 48 (old_test.go), for an A/B in one run.
func BenchmarkArgumentsPipelineOld(b *testing.B) {
	s := mustCompile(b, benchSchema)
	b.ReportAllocs()
	for b.Loop() {
		v, serr := oldDecodeJSON(benchArgs, MaxArgumentDepth)
		if serr != nil {
			b.Fatal(serr)
		}
		args, _ := s.oldRepair(v.(map[string]any))
		if errs := s.oldValidate(args); errs != nil {
			b.Fatal(errs)
		}
	}
}
