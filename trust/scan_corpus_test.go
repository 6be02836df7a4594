package trust

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// corpusRecord is one record of testdata/tool-poisoning/dev.json (see its README).
type corpusRecord struct {
	ID     string          `json:"id"`
	Source string          `json:"source"`
	Label  string          `json:"label"`
	Attack *string         `json:"attack"`
	Signal []string        `json:"signal"`
	Tool   json.RawMessage `json:"tool"`
	Notes  string          `json:"notes"`
}

func loadJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (the corpora live in the repository's testdata/; see testdata/README.md)", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// tally counts flagged (suspicious or malicious) among poisoned and clean.
type tally struct{ pos, tp, neg, fp int }

func (t *tally) add(poisoned, flagged bool) {
	if poisoned {
		t.pos++
		if flagged {
			t.tp++
		}
	} else {
		t.neg++
		if flagged {
			t.fp++
		}
	}
}

func (t tally) recall() float64 { return ratio(t.tp, t.pos) }
func (t tally) fpr() float64    { return ratio(t.fp, t.neg) }
func (t tally) precision() float64 {
	return ratio(t.tp, t.tp+t.fp)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func (t tally) row(name string) string {
	prec := "     -"
	if t.tp+t.fp > 0 {
		prec = fmt.Sprintf("%5.1f%%", 100*t.precision())
	}
	return fmt.Sprintf("%-62s %4d/%-4d recall %5.1f%%  %4d/%-4d FPR %5.1f%%  precision %s", name, t.tp, t.pos, 100*t.recall(), t.fp, t.neg, 100*t.fpr(), prec)
}

// scanRecords scans records as one file: each tool's context is all the
// others, as `toolgate scan FILE` does.
func scanRecords(recs []corpusRecord) []Report {
	defs := make([]ToolDef, len(recs))
	for i, r := range recs {
		if err := json.Unmarshal(r.Tool, &defs[i]); err != nil {
			panic(err)
		}
	}
	return ScanSet("", defs, nil)
}

func signalIs(r corpusRecord, sig ...string) bool {
	for _, s := range r.Signal {
		for _, w := range sig {
			if s == w {
				return true
			}
		}
	}
	return false
}

// liveTools returns LiveMCPBench's real tools, one set per server.
func liveTools(t testing.TB) (servers []string, sets map[string][]ToolDef) {
	var raw []struct {
		Tools map[string]struct {
			Tools []ToolDef `json:"tools"`
		} `json:"tools"`
	}
	loadJSON(t, filepath.Join("..", "testdata", "livemcpbench", "tools.json"), &raw)
	sets = map[string][]ToolDef{}
	for _, s := range raw {
		for name, srv := range s.Tools {
			servers = append(servers, name)
			sets[name] = append(sets[name], srv.Tools...)
		}
	}
	sort.Strings(servers)
	return servers, sets
}

// TestCorpus measures the scanner on the development split of the
// tool-poisoning corpus and on LiveMCPBench's 527 real tools, prints
// recall and false-positive rate per attack and per source, and holds them
// above floors a little under what the scanner reaches.
func TestCorpus(t *testing.T) {
	var recs []corpusRecord
	loadJSON(t, filepath.Join("..", "testdata", "tool-poisoning", "dev.json"), &recs)
	reps := scanRecords(recs)

	var static, names, behaviour, clean tally
	byAttack := map[string]*tally{}
	bySource := map[string]*tally{}
	byKind := map[string]*tally{}
	for i, r := range recs {
		rep := reps[i]
		flagged := rep.Verdict != Clean
		poisoned := r.Label == "poisoned"
		kinds := map[string]bool{}
		for _, f := range rep.Findings {
			if f.Weight > 0 {
				kinds[f.Kind] = true
			}
		}
		for k := range kinds {
			if byKind[k] == nil {
				byKind[k] = &tally{}
			}
			byKind[k].add(poisoned, true)
		}
		switch {
		case !poisoned:
			clean.add(false, flagged)
		case signalIs(r, "description", "parameters"):
			static.add(true, flagged)
		case signalIs(r, "name", "server-name"):
			names.add(true, flagged)
		default:
			behaviour.add(true, flagged)
		}
		if poisoned && !signalIs(r, "description", "parameters") {
			// name and behaviour records are counted apart
		} else {
			key := r.Source + " / clean"
			if poisoned {
				key = r.Source + " / " + *r.Attack
			}
			if byAttack[key] == nil {
				byAttack[key] = &tally{}
			}
			byAttack[key].add(poisoned, flagged)
			if bySource[r.Source] == nil {
				bySource[r.Source] = &tally{}
			}
			bySource[r.Source].add(poisoned, flagged)
		}
		if poisoned != flagged && (!poisoned || signalIs(r, "description", "parameters", "name")) {
			t.Logf("%s %s (%s): %s score %d %s", map[bool]string{true: "MISS", false: "FALSE POSITIVE"}[poisoned], r.ID, r.Tool[:min(60, len(r.Tool))], rep.Verdict, rep.Score, summary(rep))
		}
	}

	servers, sets := liveTools(t)
	var live tally
	for _, s := range servers {
		for _, rep := range ScanSet(s, sets[s], servers) {
			live.add(false, rep.Verdict != Clean)
			if rep.Verdict != Clean {
				t.Logf("FALSE POSITIVE livemcpbench %s/%s: %s score %d %s", s, rep.Tool, rep.Verdict, rep.Score, summary(rep))
			}
		}
	}

	// the same tools as one file: no server known, every tool the others' context
	var all527 []ToolDef
	for _, s := range servers {
		all527 = append(all527, sets[s]...)
	}
	var liveFile tally
	for _, rep := range ScanSet("", all527, nil) {
		liveFile.add(false, rep.Verdict != Clean)
		if rep.Verdict != Clean {
			t.Logf("FALSE POSITIVE livemcpbench as one file %s: %s score %d %s", rep.Tool, rep.Verdict, rep.Score, summary(rep))
		}
	}

	// each record alone, with no context
	var alone tally
	for _, r := range recs {
		if r.Label == "poisoned" && !signalIs(r, "description", "parameters") {
			continue
		}
		rep, err := ScanJSON(r.Tool, ScanContext{})
		if err != nil {
			t.Fatal(err)
		}
		alone.add(r.Label == "poisoned", rep.Verdict != Clean)
	}

	// MSB's prompt-injection template and the other injected texts, appended
	// to clean descriptions (the README suggests it as a definition payload)
	var inj []struct{ ID, Attack, Text string }
	loadJSON(t, filepath.Join("..", "testdata", "tool-poisoning", "response-injection.json"), &inj)
	var cleanDefs []ToolDef
	for i, r := range recs {
		if r.Label == "clean" {
			var d ToolDef
			_ = json.Unmarshal(recs[i].Tool, &d)
			cleanDefs = append(cleanDefs, d)
		}
	}
	var appended tally
	for i, x := range inj {
		if x.Attack == "search_term_deception" {
			continue // plausible page text with no instruction: nothing to find in a definition
		}
		d := cleanDefs[i%len(cleanDefs)]
		d.Description += "\n\n" + x.Text
		rep := Scan(d, ScanContext{})
		appended.add(true, rep.Verdict != Clean)
		if rep.Verdict == Clean {
			t.Logf("MISS injected text %s appended to %s: %s", x.ID, d.Name, summary(rep))
		}
	}

	var b strings.Builder
	fmt.Fprintln(&b, "\nper attack (description/parameters signal) and clean, dev.json:")
	keys := make([]string, 0, len(byAttack))
	for k := range byAttack {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintln(&b, byAttack[k].row(k))
	}
	fmt.Fprintln(&b, "\nper source:")
	for _, k := range []string{"mcp-safetybench", "msb", "mcpsecbench"} {
		if bySource[k] != nil {
			fmt.Fprintln(&b, bySource[k].row(k))
		}
	}
	fmt.Fprintln(&b, "\nper finding kind (weight > 0): tools with the kind, poisoned / clean of dev.json:")
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "%-26s poisoned %3d  clean %3d  precision %5.1f%%\n", k, byKind[k].tp, byKind[k].fp, 100*byKind[k].precision())
	}
	all := clean
	all.neg += live.neg
	all.fp += live.fp
	fmt.Fprintln(&b, "\ntotals:")
	fmt.Fprintln(&b, static.row("poisoned, description/parameters signal"))
	fmt.Fprintln(&b, names.row("poisoned, name signal (file as context)"))
	fmt.Fprintln(&b, behaviour.row("poisoned, behaviour signal (response time; not scored)"))
	fmt.Fprintln(&b, clean.row("clean, dev.json"))
	fmt.Fprintln(&b, live.row("clean, livemcpbench (per server, all servers known)"))
	fmt.Fprintln(&b, all.row("clean, all"))
	fmt.Fprintln(&b, liveFile.row("clean, livemcpbench as one file (no servers known)"))
	fmt.Fprintln(&b, alone.row("dev.json description/parameters and clean, each alone"))
	fmt.Fprintln(&b, appended.row("injected texts appended to clean descriptions"))
	pr := static
	pr.neg, pr.fp = all.neg, all.fp
	fmt.Fprintf(&b, "precision (description/parameters poisoned vs all clean): %.1f%%\n", 100*pr.precision())
	t.Log(b.String())

	if static.recall() < 0.90 {
		t.Errorf("recall on description/parameters poisoning %.1f%% < 90%%", 100*static.recall())
	}
	if names.recall() < 0.85 {
		t.Errorf("recall on name look-alikes %.1f%% < 85%%", 100*names.recall())
	}
	if appended.recall() < 0.85 {
		t.Errorf("recall on injected texts appended to descriptions %.1f%% < 85%%", 100*appended.recall())
	}
	if all.fpr() > 0.02 || liveFile.fpr() > 0.02 {
		t.Errorf("false-positive rate on clean tools %.1f%% (livemcpbench as one file %.1f%%) > 2%%", 100*all.fpr(), 100*liveFile.fpr())
	}
}

func summary(r Report) string {
	var parts []string
	for _, f := range r.Findings {
		if f.Weight > 0 {
			parts = append(parts, fmt.Sprintf("[%s %d %s %q]", f.Kind, f.Weight, f.Field, f.Evidence))
		}
	}
	return strings.Join(parts, " ")
}

// TestHandwritten measures the scanner on trust/testdata/handwritten.json:
// definitions written for this package (paraphrased attacks, tricky clean
// tools), scanned as one file.
func TestHandwritten(t *testing.T) {
	for _, f := range []string{"handwritten.json", "handwritten-2.json", "handwritten-3.json", "handwritten-4.json"} {
		t.Run(f, func(t *testing.T) { handwritten(t, f) })
	}
}

func handwritten(t *testing.T, file string) {
	var set struct {
		Poisoned []ToolDef `json:"poisoned"`
		Clean    []ToolDef `json:"clean"`
	}
	loadJSON(t, filepath.Join("testdata", file), &set)
	reps := ScanSet("", append(append([]ToolDef{}, set.Poisoned...), set.Clean...), nil)
	var tl tally
	for i, rep := range reps {
		poisoned := i < len(set.Poisoned)
		flagged := rep.Verdict != Clean
		tl.add(poisoned, flagged)
		if poisoned != flagged {
			t.Logf("%s %s: %s score %d %s", map[bool]string{true: "MISS", false: "FALSE POSITIVE"}[poisoned], rep.Tool, rep.Verdict, rep.Score, summary(rep))
		}
	}
	t.Log("\n" + tl.row(file+", scanned as one file"))
	if tl.recall() < 0.85 || tl.fpr() > 0.05 {
		t.Errorf("hand-written set: recall %.1f%%, FPR %.1f%%", 100*tl.recall(), 100*tl.fpr())
	}
}
