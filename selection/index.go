package selection

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/tool"
)

// Fields of a definition; the first four are those of Weights.
const (
	fieldName = iota
	fieldDescription
	fieldParamNames
	fieldParamDescriptions
	fieldNameBigrams // adjacent pairs of name terms: "beat track" of beat_track
	numFields
)

// Weights are the BM25F weights of the fields of a definition: how much one
// occurrence of a term in a field counts, relative to the others.
type Weights struct {
	Name              float64 // Definition.Name and Title
	Description       float64 // Definition.Description and Tags
	ParamNames        float64 // property names of InputSchema
	ParamDescriptions float64 // property titles and descriptions of InputSchema
}

// DefaultWeights returns the weights an Index uses unless told otherwise;
// the package documentation says why they are what they are.
func DefaultWeights() Weights {
	return Weights{Name: 3, Description: 1, ParamNames: 1, ParamDescriptions: 0.5}
}

// Options configure an Index. The zero value is the default method.
type Options struct {
	// Weights of the fields; the zero value means DefaultWeights().
	Weights Weights
	// K1 is the BM25 term-frequency saturation; 0 means 1.2.
	K1 float64
	// NoStemming indexes words as written instead of by English stem.
	NoStemming bool
	// NoExpansion turns off query expansion (generic synonyms, and "file"
	// or "url" for a query holding a path or a URL).
	NoExpansion bool
	// Groups, when not nil, gives each definition (by position) a group:
	// the server or tool set it belongs to ("" for none).
	Groups []string
	// GroupWeight adds to each grouped definition's score this share of the
	// best score in its group, so that the tools of the server that fits a
	// request best rise together (a task needs several tools of one server
	// more often than not); 0 means 0.2, negative means no boost.
	GroupWeight float64
	// Plain makes the index plain Okapi BM25 (k1 = K1, b 0.75) over one
	// field holding name, description and parameters: no stemming, no
	// expansion, no name bigrams, CJK runs kept whole. It is the reference
	// floor of the benchmarks, not a method to use.
	Plain bool
}

// expansionWeight is how much a term added to a query by expansion counts,
// against 1 for a term the query holds.
const expansionWeight = 0.75

// maxQueryTerms bounds the work of one Select: later terms of a longer
// query are ignored.
const maxQueryTerms = 256

// Match is one definition selected for a query.
type Match struct {
	Name  string  // Definition.Name
	Index int     // position of the definition in the slice given to New
	Score float64 // relevance; comparable only within one Select
}

// Index ranks tool definitions against free-text queries with BM25F. It is
// immutable once built and safe for concurrent use.
//
// Each term has a postings list of the definitions holding it, with the
// term's whole BM25F contribution (IDF, field weights, length normalisation
// and saturation) computed at build time; a query only adds up postings.
type Index struct {
	names   []string
	an      analyzer
	terms   map[string]int32 // term → term id
	start   []int32          // postings of term t: docs[start[t]:start[t+1]]
	docs    []int32          // definition positions, ascending within a term
	weights []float32        // score of the term in that definition
	expand  map[string][]string
	plain   bool
	groups  []int32 // group id per definition, -1 for none
	nGroups int
	groupW  float64
	scratch sync.Pool // *scratch, one per concurrent Select
}

type scratch struct {
	scores  []float64 // per definition; zero between Selects
	touched []int32   // definitions with a non-zero score
}

// New builds an index over defs. It reads each definition's name, title,
// description and tags and the property names, titles and descriptions of
// its input schema; a malformed schema contributes what can be read of it.
func New(defs []tool.Definition, opts Options) *Index {
	k1 := opts.K1
	if k1 <= 0 {
		k1 = 1.2
	}
	w := opts.Weights
	if w == (Weights{}) {
		w = DefaultWeights()
	}
	weights := [numFields]float64{w.Name, w.Description, w.ParamNames, w.ParamDescriptions, 1}
	// Length normalisation: full for the text fields, none for name bigrams
	// (a name has few of them, and a long name is no less about each).
	b := [numFields]float64{0.75, 0.75, 0.75, 0.75, 0}
	x := &Index{
		names: make([]string, len(defs)),
		an: analyzer{
			stem: !opts.NoStemming, bigrams: true, catenate: true,
			stop: stopSet(stopWords), memoTerms: map[string]string{}, memo: true,
		},
		terms: map[string]int32{},
		plain: opts.Plain,
	}
	fieldOf := func(f int) int { return f }
	if opts.Plain {
		x.an = analyzer{stop: stopSet(stopWords), memoTerms: map[string]string{}, memo: true}
		weights, b = [numFields]float64{1}, [numFields]float64{0.75}
		fieldOf = func(int) int { return 0 }
	}

	// Pass 1: every definition into term ids, each with its field.
	size := 0
	for _, def := range defs {
		size += len(def.Name) + len(def.Description) + len(def.InputSchema)/2
	}
	p := &pass1{x: x, fieldOf: fieldOf, lens: make([][numFields]float64, len(defs))}
	p.toks = make([]int32, 0, size/6)
	p.fields = make([]uint8, 0, size/6)
	docStart := make([]int32, len(defs)+1) // tokens of d: toks[docStart[d]:docStart[d+1]]
	var sumLen [numFields]float64
	emit := p.emit
	for d, def := range defs {
		x.names[d] = def.Name
		p.doc, p.field, p.prev, p.bigrams = d, fieldName, "", !opts.Plain
		x.an.terms(def.Name, emit)
		p.bigrams = false
		x.an.terms(def.Title, emit)
		p.field = fieldDescription
		x.an.terms(def.Description, emit)
		for _, tag := range def.Tags {
			x.an.terms(tag, emit)
		}
		params(def.InputSchema, func(name, title, desc string) {
			p.field = fieldParamNames
			x.an.terms(name, emit)
			p.field = fieldParamDescriptions
			x.an.terms(title, emit)
			x.an.terms(desc, emit)
		})
		docStart[d+1] = int32(len(p.toks))
		for f := range numFields {
			sumLen[f] += p.lens[d][f]
		}
	}
	toks, fields, lens := p.toks, p.fields, p.lens
	x.an.memo = false
	var avgLen [numFields]float64
	for f := range numFields {
		avgLen[f] = max(sumLen[f]/float64(max(len(defs), 1)), 1)
	}

	// Pass 2: document frequencies, hence where each postings list starts.
	nTerms := len(x.terms)
	last := make([]int32, nTerms) // last definition that counted the term, plus one
	df := make([]int32, nTerms)
	for d := range defs {
		for _, t := range toks[docStart[d]:docStart[d+1]] {
			if last[t] != int32(d+1) {
				last[t] = int32(d + 1)
				df[t]++
			}
		}
	}
	x.start = make([]int32, nTerms+1)
	for t := range nTerms {
		x.start[t+1] = x.start[t] + df[t]
	}
	idf := make([]float64, nTerms)
	n := float64(len(defs))
	for t := range nTerms {
		idf[t] = math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
	}

	// Pass 3: each definition's term frequencies per field into postings.
	x.docs = make([]int32, x.start[nTerms])
	x.weights = make([]float32, x.start[nTerms])
	next := slices.Clone(x.start[:nTerms])
	tf := make([][numFields]float64, nTerms)
	clear(last)
	var uniq []int32
	for d := range defs {
		uniq = uniq[:0]
		for i := docStart[d]; i < docStart[d+1]; i++ {
			t := toks[i]
			if last[t] != int32(d+1) {
				last[t] = int32(d + 1)
				tf[t] = [numFields]float64{}
				uniq = append(uniq, t)
			}
			tf[t][fields[i]]++
		}
		var norm [numFields]float64
		for f := range numFields {
			norm[f] = 1 - b[f] + b[f]*lens[d][f]/avgLen[f]
		}
		for _, t := range uniq {
			var pseudo float64 // BM25F: weighted, length-normalised frequency
			for f := range numFields {
				if tf[t][f] > 0 {
					pseudo += weights[f] * tf[t][f] / norm[f]
				}
			}
			p := next[t]
			next[t]++
			x.docs[p] = int32(d)
			x.weights[p] = float32(idf[t] * pseudo / (k1 + pseudo))
		}
	}
	if opts.Groups != nil && opts.GroupWeight >= 0 && !opts.Plain {
		x.groupW = opts.GroupWeight
		if x.groupW == 0 {
			x.groupW = 0.2
		}
		x.groups = make([]int32, len(defs))
		ids := map[string]int32{}
		for d := range defs {
			g := ""
			if d < len(opts.Groups) {
				g = opts.Groups[d]
			}
			if g == "" {
				x.groups[d] = -1
				continue
			}
			id, ok := ids[g]
			if !ok {
				id = int32(len(ids))
				ids[g] = id
			}
			x.groups[d] = id
		}
		x.nGroups = len(ids)
	}
	if !opts.Plain && !opts.NoExpansion {
		x.expand = synonyms(&x.an)
	}
	x.scratch.New = func() any { return &scratch{scores: make([]float64, len(defs))} }
	return x
}

// pass1 collects the terms of definitions as the analyzer emits them.
type pass1 struct {
	x       *Index
	fieldOf func(int) int
	toks    []int32 // term ids of all definitions
	fields  []uint8 // field of each token
	lens    [][numFields]float64
	doc     int    // the definition being read
	field   int    // the field being read
	bigrams bool   // add bigrams of adjacent terms
	prev    string // previous term, for bigrams
}

func (p *pass1) emit(term string, joined bool) {
	p.add(p.field, term)
	if p.bigrams && !joined {
		if p.prev != "" {
			p.add(fieldNameBigrams, p.prev+" "+term)
		}
		p.prev = term
	}
}

func (p *pass1) add(f int, term string) {
	id, ok := p.x.terms[term]
	if !ok {
		id = int32(len(p.x.terms))
		p.x.terms[strings.Clone(term)] = id // a clone: term may be a slice of a whole description
	}
	f = p.fieldOf(f)
	p.toks = append(p.toks, id)
	p.fields = append(p.fields, uint8(f))
	p.lens[p.doc][f]++
}

// Len returns the number of definitions in the index.
func (x *Index) Len() int { return len(x.names) }

// Select returns up to k definitions that best match query, best first.
// Only definitions sharing a term with the query (or with its expansion)
// are returned, so there may be fewer than k. Equal scores are ordered by
// name, then by position.
func (x *Index) Select(query string, k int) []Match {
	if k <= 0 || len(x.names) == 0 {
		return nil
	}
	q := x.query(query)
	if len(q) == 0 {
		return nil
	}
	s := x.scratch.Get().(*scratch)
	defer x.scratch.Put(s)
	x.accumulate(s, q)
	if x.groups != nil {
		x.groupBoost(s)
	}
	return x.top(s, k)
}

// top returns the best k of the definitions s scored, best first, and
// leaves s zeroed for the next query.
func (x *Index) top(s *scratch, k int) []Match {
	// Keep the best k in order; most candidates fail the first comparison.
	top := make([]Match, 0, min(k, len(s.touched)))
	for _, d := range s.touched {
		m := Match{Name: x.names[d], Index: int(d), Score: s.scores[d]}
		s.scores[d] = 0
		if len(top) < k {
			top = append(top, m)
			if len(top) == k {
				slices.SortFunc(top, better)
			}
			continue
		}
		if better(m, top[k-1]) < 0 {
			i, _ := slices.BinarySearchFunc(top, m, better)
			copy(top[i+1:], top[i:k-1])
			top[i] = m
		}
	}
	s.touched = s.touched[:0]
	if len(top) < k {
		slices.SortFunc(top, better)
	}
	return top
}

// better orders matches best first: higher score, then name, then position.
func better(a, b Match) int {
	if a.Score != b.Score {
		if a.Score > b.Score {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return cmp.Compare(a.Index, b.Index)
}

type queryTerm struct {
	id     int32
	weight float64
}

// query analyses a query into the index's term ids with their weights: 1 for
// each distinct term (repeating a word adds nothing: long requests repeat
// their subject, not their need) and each bigram of adjacent terms, and
// expansionWeight for a term added by expansion.
func (x *Index) query(query string) []queryTerm {
	var q []queryTerm
	seen := map[string]bool{}
	var words []string
	add := func(term string, w float64) {
		if seen[term] || len(seen) >= maxQueryTerms {
			return
		}
		seen[term] = true
		if id, ok := x.terms[term]; ok {
			q = append(q, queryTerm{id: id, weight: w})
		}
	}
	prev := ""
	x.an.terms(query, func(term string, joined bool) {
		add(term, 1)
		words = append(words, term)
		if !joined && !x.plain {
			if prev != "" {
				add(prev+" "+term, 1)
			}
			prev = term
		}
	})
	if x.expand == nil {
		return q
	}
	for _, h := range hints(query) {
		x.an.terms(h, func(term string, _ bool) { add(term, expansionWeight) })
	}
	for _, w := range words {
		for _, syn := range x.expand[w] {
			add(syn, expansionWeight)
		}
	}
	return q
}

// accumulate adds the postings of q's terms into s.
func (x *Index) accumulate(s *scratch, q []queryTerm) {
	for _, qt := range q {
		for p := x.start[qt.id]; p < x.start[qt.id+1]; p++ {
			d := x.docs[p]
			if s.scores[d] == 0 {
				s.touched = append(s.touched, d)
			}
			s.scores[d] += qt.weight * float64(x.weights[p])
		}
	}
}

// groupBoost adds to each grouped definition a share of the best score in
// its group, including definitions that matched nothing themselves.
func (x *Index) groupBoost(s *scratch) {
	best := make([]float64, x.nGroups)
	for _, d := range s.touched {
		if g := x.groups[d]; g >= 0 {
			best[g] = max(best[g], s.scores[d])
		}
	}
	for d, g := range x.groups {
		if g >= 0 && best[g] > 0 {
			if s.scores[d] == 0 {
				s.touched = append(s.touched, int32(d))
			}
			s.scores[d] += x.groupW * best[g]
		}
	}
}
