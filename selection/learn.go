package selection

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// Usage is one thing use teaches: a caller searched for Query and then
// called Tool successfully. It is the record of issue 31's contract, in
// JSON Lines {"query", "tool", "principal", "time"}.
type Usage struct {
	Query     string    `json:"query"`
	Tool      string    `json:"tool"`
	Principal string    `json:"principal,omitempty"`
	Time      time.Time `json:"time,omitzero"` // zero: now
	// Definition is DefinitionHash of the tool as it was when it was
	// called; a record whose hash is not the tool's current one teaches
	// nothing (the tool changed). Empty matches any definition.
	Definition string `json:"definition,omitempty"`
}

// LearnMethod is how usage becomes a score.
type LearnMethod int

const (
	// LearnQueries scores each tool's usage document (the words of the
	// queries that led to it, each principal counting at most once per
	// word) with BM25 and adds it to the text score: the tool's document
	// expanded with its users' words. The default, and the best measured.
	LearnQueries LearnMethod = iota
	// LearnAssociation scores a query word's association with a tool,
	// P(tool | word) among the tools it led to, smoothed, weighted by the
	// word's rarity. Kept for the benchmark that compares them.
	LearnAssociation
)

// LearnOptions configure Learn. The zero value is the default.
type LearnOptions struct {
	// HalfLife is how fast a record ages: its weight halves every
	// HalfLife; 0 means 30 days, negative means records never age.
	HalfLife time.Duration
	// Now is the time records are aged to; zero means time.Now().
	Now time.Time
	// Weight scales the learned score against the text score; 0 means 1.
	Weight float64
	// Method chooses how usage scores; the zero value is LearnQueries.
	Method LearnMethod
}

// DefaultHalfLife is how long a usage record takes to lose half its weight.
const DefaultHalfLife = 30 * 24 * time.Hour

// Learning bounds. A principal counts at most once per (word, tool): its
// 2,000 records weigh what one ordinary user's one query with that word
// weighs, whatever it repeats. A record reads at most maxLearnTerms words.
const (
	maxLearnTerms = 64
	learnK1       = 1.2
	learnB        = 0.75
	// longQuery is the length (in distinct words) beyond which a query's
	// words each teach proportionally less.
	longQuery = 16
	// maxPrincipalMass bounds what one principal teaches about one tool:
	// the words of about four ordinary queries.
	maxPrincipalMass = 32
)

// DefinitionHash identifies a definition's content: what it is called and
// what it says it does and takes. Learning is keyed by it, so a tool whose
// upstream renames or changes it starts again from its description.
func DefinitionHash(def tool.Definition) string {
	h := sha256.New()
	for _, s := range []string{def.Name, def.Title, def.Description, string(def.InputSchema)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// Learned is what usage taught an Index: a score per (query word, tool).
// It is immutable and safe for concurrent use; a nil or empty Learned
// changes nothing.
type Learned struct {
	n        int              // definitions of the index it was built for
	terms    map[string]int32 // term → id
	start    []int32          // postings of term t: docs[start[t]:start[t+1]]
	docs     []int32
	weights  []float32
	who      [][]int32 // per posting: the principals behind it, ascending
	weight   float64
	records  int
	nPrinc   int
	princMap []string
}

// Records returns how many usage records taught l (after the ones for
// unknown or changed tools were dropped).
func (l *Learned) Records() int {
	if l == nil {
		return 0
	}
	return l.records
}

// Principals returns how many distinct principals taught l.
func (l *Learned) Principals() int {
	if l == nil {
		return 0
	}
	return l.nPrinc
}

// Learn builds what records teach the index x, whose definitions are defs
// (the slice given to New). A record counts when its tool is in defs (by
// name; its Definition hash, if set, must be the definition's), with a
// weight that halves every HalfLife of its age; a query of more than 16
// words teaches each proportionally less. Then, per principal: the same
// query for the same tool counts once; a principal adds at most 1 to any
// (word, tool) and at most 32 over all the words of one tool (about four
// ordinary queries), however many records it has; and when two principals
// or more taught anything, the strongest one behind each (word, tool) is
// left out, so that what counts is what others agree with. One principal's
// flood of records therefore moves no one's ranking by itself.
func (x *Index) Learn(defs []tool.Definition, records []Usage, o LearnOptions) *Learned {
	if len(defs) != len(x.names) {
		return nil
	}
	half := o.HalfLife
	if half == 0 {
		half = DefaultHalfLife
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	l := &Learned{n: len(defs), terms: map[string]int32{}, weight: o.Weight}
	if l.weight <= 0 {
		l.weight = 1
	}
	byName := map[string][]int32{}
	for d, def := range defs {
		byName[def.Name] = append(byName[def.Name], int32(d))
	}
	hashes := map[int32]string{}
	principals := map[string]int32{}

	type ptd struct{ p, t, d int32 }
	type pqd struct {
		p int32
		q string
		d int32
	}
	perQuery := map[pqd]float64{} // one query counts once per principal and tool
	var qterms []int32
	sum := map[ptd]float64{}
	for _, r := range records {
		ds := byName[r.Tool]
		if len(ds) == 0 {
			continue
		}
		w := 1.0
		if half > 0 && !r.Time.IsZero() {
			if age := now.Sub(r.Time); age > 0 {
				w = math.Exp2(-float64(age) / float64(half))
			}
		}
		if w < 1e-3 {
			continue
		}
		qterms = l.queryTerms(x, r.Query, qterms[:0])
		if len(qterms) == 0 {
			continue
		}
		p, ok := principals[r.Principal]
		if !ok {
			p = int32(len(principals))
			principals[r.Principal] = p
			l.princMap = append(l.princMap, r.Principal)
		}
		key := termsKey(qterms)
		used := false
		for _, d := range ds {
			if r.Definition != "" {
				h, ok := hashes[d]
				if !ok {
					h = DefinitionHash(defs[d])
					hashes[d] = h
				}
				if h != r.Definition {
					continue
				}
			}
			k := pqd{p, key, d}
			prev := perQuery[k]
			if w <= prev {
				used = true
				continue
			}
			perQuery[k] = w
			lw := 1.0 // a long query teaches less per word
			if len(qterms) > longQuery {
				lw = longQuery / float64(len(qterms))
			}
			for _, t := range qterms {
				sum[ptd{p, t, d}] += (w - prev) * lw
			}
			used = true
		}
		if used {
			l.records++
		}
	}
	if len(sum) == 0 {
		return l
	}
	taught := map[int32]bool{} // principals with a record that counts
	for k := range sum {
		taught[k.p] = true
	}
	l.nPrinc = len(taught)

	// A principal's mass on a tool (Σ over words of min(1, weight)) is
	// capped at maxPrincipalMass: beyond it, all its words for the tool
	// are scaled down together.
	type pd struct{ p, d int32 }
	mass0 := map[pd]float64{}
	for k, w := range sum {
		mass0[pd{k.p, k.d}] += min(w, 1)
	}
	// tf(t, d) = Σ over principals of min(1, their weight on (t, d)).
	type td struct{ t, d int32 }
	tf := map[td]float64{}
	top := map[td]float64{}
	who := map[td][]int32{}
	docLen := make([]float64, len(defs))
	for k, w := range sum {
		c := min(w, 1)
		if m := mass0[pd{k.p, k.d}]; m > maxPrincipalMass {
			c *= maxPrincipalMass / m
		}
		tf[td{k.t, k.d}] += c
		top[td{k.t, k.d}] = max(top[td{k.t, k.d}], c)
		who[td{k.t, k.d}] = append(who[td{k.t, k.d}], k.p)
		docLen[k.d] += c
	}
	// With two principals or more, the strongest principal behind each
	// (word, tool) does not count: what is learned is what others agree
	// with, so no principal alone moves a ranking. A lone principal (a
	// local, single-user gateway) still teaches its own ranking.
	if l.nPrinc > 1 {
		for k, c := range top {
			tf[k] -= c
			docLen[k.d] -= c
			if tf[k] <= 1e-9 {
				delete(tf, k)
			}
		}
	}
	var sumLen float64
	var docsWith int
	for d := range defs {
		if docLen[d] > 0 {
			sumLen += docLen[d]
			docsWith++
		}
	}
	avgLen := sumLen / float64(max(docsWith, 1))

	// Postings, term by term, tools ascending.
	keys := make([]td, 0, len(tf))
	for k := range tf {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b td) int {
		if a.t != b.t {
			return int(a.t - b.t)
		}
		return int(a.d - b.d)
	})
	nTerms := len(l.terms)
	df := make([]int, nTerms)
	mass := make([]float64, nTerms) // Σ_d tf(t, d)
	for _, k := range keys {
		df[k.t]++
		mass[k.t] += tf[k]
	}
	l.start = make([]int32, nTerms+1)
	for t := range nTerms {
		l.start[t+1] = l.start[t] + int32(df[t])
	}
	n := float64(len(defs))
	for _, k := range keys {
		idf := math.Log(1 + (n-float64(df[k.t])+0.5)/(float64(df[k.t])+0.5))
		f := tf[k]
		var s float64
		switch o.Method {
		case LearnAssociation:
			s = idf * f / (mass[k.t] + 1)
		default:
			norm := 1 - learnB + learnB*docLen[k.d]/avgLen
			s = idf * f / (f + learnK1*norm)
		}
		l.docs = append(l.docs, k.d)
		l.weights = append(l.weights, float32(s))
		ps := who[k]
		slices.Sort(ps)
		l.who = append(l.who, ps)
	}
	return l
}

// queryTerms appends the distinct term ids of query to out, adding terms
// l does not know yet (while learning).
func (l *Learned) queryTerms(x *Index, query string, out []int32) []int32 {
	x.an.terms(query, func(term string, _ bool) {
		if len(out) >= maxLearnTerms {
			return
		}
		id, ok := l.terms[term]
		if !ok {
			id = int32(len(l.terms))
			l.terms[strings.Clone(term)] = id
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	})
	return out
}

// termsKey is a query's identity for the once-per-principal rule: its
// distinct terms, in order of id.
func termsKey(ts []int32) string {
	s := slices.Clone(ts)
	slices.Sort(s)
	var b strings.Builder
	for _, t := range s {
		b.WriteString(string(rune(t + 1)))
	}
	return b.String()
}

// empty reports whether l teaches nothing.
func (l *Learned) empty() bool { return l == nil || len(l.docs) == 0 }

// lookup returns the learned term ids of query (known terms only).
func (l *Learned) lookup(x *Index, query string) []int32 {
	var out []int32
	x.an.terms(query, func(term string, _ bool) {
		if len(out) >= maxLearnTerms {
			return
		}
		if id, ok := l.terms[term]; ok && !slices.Contains(out, id) {
			out = append(out, id)
		}
	})
	return out
}

// add adds the learned scores of the query terms ts into s.
func (l *Learned) add(s *scratch, ts []int32) {
	for _, t := range ts {
		if int(t) >= len(l.start)-1 {
			continue
		}
		for p := l.start[t]; p < l.start[t+1]; p++ {
			d := l.docs[p]
			v := l.weight * float64(l.weights[p])
			if v == 0 {
				continue
			}
			if s.scores[d] == 0 {
				s.touched = append(s.touched, d)
			}
			s.scores[d] += v
		}
	}
}

// Explanation says where a result's score came from.
type Explanation struct {
	Match
	Text       float64  // from the definition's text (BM25F, expansion, group)
	Use        float64  // from usage
	Principals []string // who taught the query's words for this tool
}

// SelectLearned is Select with what l learned added to the text score: the
// best k definitions for query, best first. With a nil or empty l it is
// exactly Select.
func (x *Index) SelectLearned(query string, k int, l *Learned) []Match {
	if l.empty() || l.n != len(x.names) {
		return x.Select(query, k)
	}
	if k <= 0 || len(x.names) == 0 {
		return nil
	}
	s := x.scratch.Get().(*scratch)
	defer x.scratch.Put(s)
	if q := x.query(query); len(q) > 0 {
		x.accumulate(s, q)
		if x.groups != nil {
			x.groupBoost(s)
		}
	}
	l.add(s, l.lookup(x, query))
	return x.top(s, k)
}

// Explain is SelectLearned that says, per result, how much of its score
// came from text and how much from use, and from which principals.
func (x *Index) Explain(query string, k int, l *Learned) []Explanation {
	ms := x.SelectLearned(query, k, l)
	out := make([]Explanation, len(ms))
	var ts []int32
	if !l.empty() && l.n == len(x.names) {
		ts = l.lookup(x, query)
	}
	for i, m := range ms {
		e := Explanation{Match: m, Text: m.Score}
		seen := map[int32]bool{}
		for _, t := range ts {
			if int(t) >= len(l.start)-1 {
				continue
			}
			for p := l.start[t]; p < l.start[t+1]; p++ {
				if int(l.docs[p]) != m.Index {
					continue
				}
				e.Use += l.weight * float64(l.weights[p])
				for _, w := range l.who[p] {
					if !seen[w] {
						seen[w] = true
						e.Principals = append(e.Principals, l.princMap[w])
					}
				}
			}
		}
		e.Text = m.Score - e.Use
		slices.Sort(e.Principals)
		out[i] = e
	}
	return out
}
