package schema

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestMetaSchemasLazy checks the patch in third_party/jsonschema: each
// draft compiles its meta-schemas on first use instead of at init, and
// still refuses every schema its meta-schema refuses, when the first uses
// of all drafts come at once (run with -race). It runs in a fresh process
// of this test binary, where nothing has compiled a meta-schema yet.
func TestMetaSchemasLazy(t *testing.T) {
	if os.Getenv("TOOLGATE_TEST_META_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMetaSchemasLazy$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "TOOLGATE_TEST_META_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestMetaSchemasLazy") {
			t.Fatalf("the test in a fresh process: %v\n%s", err, out)
		}
		return
	}
	drafts := []string{
		"http://json-schema.org/draft-04/schema#",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft/2020-12/schema",
		"", // the default: 2020-12
	}
	valid := []string{
		`"type":"object","properties":{"a":{"type":"string","maxLength":3}},"required":["a"]`,
		`"type":["object","null"],"additionalProperties":false`,
		`"properties":{"n":{"type":"integer","minimum":1,"enum":[1,2]}}`,
		`"properties":{"l":{"type":"array","items":{"type":"string","pattern":"^a"},"minItems":1}}`,
		`"allOf":[{"type":"object"}],"not":{"required":["x"]}`,
	}
	// Each is refused by the meta-schema of every draft.
	invalid := []string{
		`"type":5`,
		`"type":"objekt"`,
		`"type":["object",3]`,
		`"properties":[]`,
		`"properties":{"a":3}`,
		`"required":"a"`,
		`"required":[1]`,
		`"minimum":"1"`,
		`"maxLength":-1`,
		`"minItems":1.5`,
		`"enum":3`,
		`"pattern":5`,
		`"items":3`,
		`"allOf":{}`,
		`"anyOf":[]`,
		`"additionalProperties":"no"`,
		`"multipleOf":0`,
		`"properties":{"a":{"properties":{"b":{"type":"strin"}}}}`,
	}
	type result struct {
		schema string
		valid  bool
		err    error
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make(chan result, len(drafts)*(len(valid)+len(invalid)))
	for _, d := range drafts {
		for i, body := range append(append([]string(nil), valid...), invalid...) {
			s := "{" + body + "}"
			if d != "" {
				s = `{"$schema":"` + d + `",` + body + "}"
			}
			wg.Go(func() {
				<-start
				_, err := Compile([]byte(s))
				results <- result{s, i < len(valid), err}
			})
		}
	}
	close(start)
	wg.Wait()
	close(results)
	n := 0
	for r := range results {
		n++
		var verr *jsonschema.SchemaValidationError
		switch {
		case r.valid && r.err != nil:
			t.Errorf("%s: %v", r.schema, r.err)
		case !r.valid && !errors.As(r.err, &verr):
			t.Errorf("%s: err = %v, want the meta-schema's refusal", r.schema, r.err)
		case !r.valid && !errors.Is(r.err, ErrInvalidSchema):
			t.Errorf("%s: err = %v, want ErrInvalidSchema", r.schema, r.err)
		}
	}
	if want := len(drafts) * (len(valid) + len(invalid)); n != want {
		t.Fatalf("%d results, want %d", n, want)
	}
}
