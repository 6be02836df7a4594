package trust

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The result check reads an upstream's result as a model would and looks
// for the shapes of an injection, by meaning rather than by phrase: each
// sentence scores cues of a text that addresses the model (second person
// with a modal, an imperative, "please"), of what it wants done (call a
// tool, send data somewhere, hand over a secret, destroy or plant
// something, say something to the user), and of the framing injections use
// (fake turns and authors, orders to ignore or override the task, fake
// preconditions, "do not tell the user", emphasis tags). A sentence whose
// cues add up to resultThreshold is a finding; documentation and source
// code, which are full of imperatives and "must", rarely pair an addressed
// order with an object that matters and a framing cue.

// resultThreshold is the score at which a sentence is a finding.
const resultThreshold = 3.0

// resultMaxBytes bounds the text read of one string.
const resultMaxBytes = 256 << 10

// A resultCue is one signal in a sentence: a weight, and the kind of
// injection it points at ("" : none in particular).
type resultCue struct {
	need   []string // the cue is tried only when the lower-cased sentence holds one of these
	re     *pattern
	weight float64
	kind   string
	frame  bool // frames the next sentence too (an emphasis tag)
	addr   bool // addresses the model: a sentence needs one such cue to be a finding
	// lead, when set, is false of a plain sentence (readSentence.plain)
	// re cannot match, and
	// costs less than re: the cue is asked only where it is true.
	lead func(sentence string) bool
}

// Kinds of result findings.
const (
	KindFakeTurn      = "fake_turn"      // a fake user, system or assistant turn, or a claim to speak for the user
	KindFakeError     = "fake_error"     // an error (or failure) that gives orders
	KindToolCall      = "tool_call"      // an order to call (other) tools
	KindExfiltration  = "exfiltration"   // an order to send data somewhere
	KindSecretRequest = "secret_request" // a request for secrets or private data
	KindInstruction   = "instruction"    // other orders addressed to the model (override the task, deceive the user)
	KindHiddenText    = "hidden_text"    // text a person would not see: invisible characters, tag characters, bidi controls
)

var resultWhy = map[string]string{
	KindFakeTurn:      "the result imitates a chat turn or claims to speak for the user or the system; a tool's output cannot do either",
	KindFakeError:     "the result reports an error that gives the model orders (call something, do something first); real errors describe what failed",
	KindToolCall:      "the result tells the model to call a tool; a tool's output is data, not a plan",
	KindExfiltration:  "the result tells the model to send data to an address, a URL or a file",
	KindSecretRequest: "the result asks for secrets or private data (keys, tokens, passwords, the system prompt, the conversation)",
	KindInstruction:   "the result gives the model orders (ignore its task, hide something from the user, do something first)",
	KindHiddenText:    "the result holds characters a person does not see but a model reads (zero-width, tag or bidi control characters)",
}

// plainCue compiles a case-insensitive cue, tried when the sentence holds
// one of the |-separated words of need ("" : always).
func plainCue(need, expr string, weight float64, kind string) resultCue {
	c := resultCue{re: compileMatch(`(?i)` + expr), weight: weight, kind: kind}
	if need != "" {
		c.need = strings.Split(need, "|")
	}
	return c
}

// addressCue compiles a cue that addresses the model.
func addressCue(need, expr string, weight float64, kind string) resultCue {
	c := plainCue(need, expr, weight, kind)
	c.addr = true
	return c
}

// resultIndex is what the check reads a sentence with: the literals of
// every cue's need and prefilter (and of resultErrorWords), looked for in
// one pass, and what the cues need of them. It is derived from the cues at
// development time (buildResultIndex), not at a program's first check.
type resultIndex struct {
	lits       literals
	needed     [][]int      // per literal: the cues that need it
	free       []uint64     // the cues that need no word
	pre        []*prefilter // per cue
	cuts       []cut        // per cue: its prefilter's rarest cut, asked before it
	anchors    []*anchor    // per cue, nil: run as it is
	errorWords *prefilter
	errorAt    *anchor
	leads      []int // the cues with a lead (resultCue.lead)
	// The cues whose prefilter has only ASCII literals (a bit each), and
	// whether errorWords has: they hold on a plain sentence (readSentence).
	asciiPre   []uint64
	asciiError bool
	// The literals the cues that address the model read (their need words,
	// prefilters and anchors' starts), as the states of the automaton end
	// them (literals.only): a sentence none of which may address the model
	// is read for those alone. The single letters of their prefilters and
	// anchors ("s" of `ha(?:ve|s)`, "l" of `l(?:lm|anguage)`), which
	// nearly every sentence holds, are not looked for but taken as found
	// (addrAssumed): a prefilter may then hold where it would not, never
	// the reverse, and most of the literals a sentence ends are spared.
	addrOut, addrOutAt []int32
	// addrFrom: the states that end such literals are numbered from
	// addrFrom on (literals.relabel), so that the partial read tells them
	// by their number (literals.scanHot).
	addrFrom    int
	addrAssumed []uint64
	addrNeed    []uint64 // the need words of the cues that address the model
	// needs: the literals some cue needs (a bit each; needed has the
	// cues): most literals a text holds are only its prefilters', which
	// meet passes over.
	needs []uint64
	// gate: what a text must hold for a cue that addresses the model to
	// hold in it (see buildGate, unaddressed); its states from gateFrom
	// on end a word.
	gate     literals
	gateFrom int
	// Per cue: its weight, and bit sets of those that address the model
	// and those that frame the next sentence.
	weight       []float64
	addr, frames []uint64
	// Per cue: what compiling its expression costs, in runs of one (its
	// source's length over compileRun).
	compileCost []float64
}

// compileRun is about how many bytes of a cue's source cost as much to
// compile as one run of its expression on a sentence (about 2,000
// instructions a byte, 10,000 a run).
const compileRun = 5

var (
	resultIndexOnce sync.Once
	resultIdx       *resultIndex
)

// theResultIndex is the index the check reads with: resultIndexData (the
// automaton and every table buildResultIndex derives from the cues, laid
// out by the linker: nothing is built at run time) with the generated
// prefilters and anchors (their expressions too), whose literals' ids it
// holds.
func theResultIndex() *resultIndex {
	resultIndexOnce.Do(func() {
		n := len(resultCues())
		x := &resultIndexData
		x.pre, x.errorWords = resultPrefilters[:n], resultPrefilters[n]
		x.anchors, x.errorAt = resultAnchors[:n], resultAnchors[n]
		resultIdx = x
	})
	return resultIdx
}

// buildResultIndex makes the index of the cues, with pre and anchors (one
// per cue, then resultErrorWords') bound to its literals: what
// resultIndexData, resultPrefilters and resultAnchors hold (see
// TestResultIndexCurrent, which writes them from it).
func buildResultIndex(pre []*prefilter, anchors []*anchor) *resultIndex {
	cues := resultCues()
	words := (len(cues) + 63) / 64
	x := &resultIndex{pre: pre, anchors: anchors, free: make([]uint64, words),
		weight: make([]float64, len(cues)), compileCost: make([]float64, len(cues)), addr: make([]uint64, words), frames: make([]uint64, words)}
	need := make([][]int32, len(cues))
	for i, c := range cues {
		if c.need == nil {
			x.free[i/64] |= 1 << (i % 64)
		}
		x.weight[i] = c.weight
		if c.lead != nil {
			x.leads = append(x.leads, i)
		}
		if c.addr {
			x.addr[i/64] |= 1 << (i % 64)
		}
		if c.frames() {
			x.frames[i/64] |= 1 << (i % 64)
		}
		for _, n := range c.need {
			need[i] = append(need[i], x.lits.add(n))
		}
		x.pre[i].bind(&x.lits)
		x.anchors[i].bind(&x.lits)
		x.compileCost[i] = float64(len(c.re.src)) / compileRun
	}
	x.errorWords = x.pre[len(cues)] // resultPrefilters ends with it
	x.pre = x.pre[:len(cues)]
	x.errorWords.bind(&x.lits)
	x.errorAt = x.anchors[len(cues)]
	x.anchors = x.anchors[:len(cues)]
	x.errorAt.bind(&x.lits)
	x.lits.build()
	x.asciiPre = make([]uint64, words)
	for i, p := range x.pre {
		if p.asciiOnly() {
			x.asciiPre[i/64] |= 1 << (i % 64)
		}
	}
	x.asciiError = x.errorWords.asciiOnly()
	for _, p := range x.pre {
		p.masks(x.lits.words())
	}
	x.errorWords.masks(x.lits.words())
	x.cuts = make([]cut, len(x.pre))
	for i, p := range x.pre {
		x.cuts[i] = p.cut(x.lits.list)
	}
	x.needed = make([][]int, len(x.lits.ids))
	x.needs = make([]uint64, x.lits.words())
	addrLits, needLits := make([]uint64, x.lits.words()), make([]uint64, x.lits.words())
	for i, ids := range need {
		for _, id := range ids {
			x.needed[id] = append(x.needed[id], i)
			x.needs[id>>6] |= 1 << (id & 63)
		}
		if cues[i].addr {
			for _, id := range ids {
				needLits[id>>6] |= 1 << (id & 63)
			}
			x.pre[i].mark(addrLits)
			x.anchors[i].mark(addrLits)
		}
	}
	x.addrAssumed = make([]uint64, x.lits.words())
	for id, lit := range x.lits.list {
		if bit := uint64(1) << (id & 63); addrLits[id>>6]&bit != 0 && needLits[id>>6]&bit == 0 && len(lit) == 1 && 'a' <= lit[0] && lit[0] <= 'z' {
			x.addrAssumed[id>>6] |= bit
			addrLits[id>>6] &^= bit
		}
	}
	for w := range addrLits {
		addrLits[w] |= needLits[w]
	}
	x.addrNeed = needLits
	x.addrFrom = x.lits.relabel(func(st int) bool { return anyOf(addrLits, x.lits.out[x.lits.outAt[st]:x.lits.outAt[st+1]]) })
	x.addrOut, x.addrOutAt = x.lits.only(addrLits)
	x.buildGate(need)
	return x
}

// buildGate makes x.gate, the automaton of the words without one of which
// no cue that addresses the model may hold in an ASCII text (its need
// words; a cue that needs none, every literal of its prefilter, which then
// cannot hold), and of what makes a text one resultFold changes: a byte
// above 0x7F (one class for all), a blank it makes a space, two spaces.
// A word that holds another is left out: the other ends first. The states
// that end a word are numbered from x.gateFrom on.
func (x *resultIndex) buildGate(need [][]int32) {
	cues := resultCues()
	set := make([]uint64, x.lits.words())
	for i, c := range cues {
		if !c.addr {
			continue
		}
		if c.need != nil {
			for _, id := range need[i] {
				set[id>>6] |= 1 << (id & 63)
			}
			continue
		}
		if x.pre[i].mayMatch(make([]uint64, x.lits.words())) {
			panic("trust: a cue that addresses the model holds with no literal: no gate")
		}
		x.pre[i].mark(set)
	}
	words := []string{"\t", "\v", "\f", "\r", "  ", "\x80"}
	for id, lit := range x.lits.list {
		if set[id>>6]&(1<<(id&63)) != 0 && isASCII(lit) { // else it holds a byte above 0x7F
			words = append(words, lit)
		}
	}
	slices.Sort(words)
	words = slices.Compact(words)
	for _, w := range words {
		if !slices.ContainsFunc(words, func(v string) bool { return v != w && strings.Contains(w, v) }) {
			x.gate.add(w)
		}
	}
	x.gate.build()
	for c := 0x81; c <= 0xFF; c++ {
		x.gate.class[c] = x.gate.class[0x80]
	}
	x.gateFrom = x.gate.relabel(func(st int) bool { return x.gate.outAt[st] < x.gate.outAt[st+1] })
}

// unaddressed reports whether s is a text no sentence of which can be a
// finding, read by the gate alone: s is folded ASCII (resultFold leaves
// it, no character is hidden) and holds none of the words a cue that
// addresses the model needs, so that none may hold (mayScore is false).
// Data of digits and signs (a counter's output, numbers, hashes) stop
// here. In the root state eight bytes in which no word can begin (class
// 0) are passed at a time.
func (x *resultIndex) unaddressed(s string) bool {
	g := &x.gate
	next, class, width, from := g.next, &g.class, g.width, x.gateFrom
	for i, st := 0, 0; i < len(s); i++ {
		if st == 0 {
			for ; i+8 <= len(s); i += 8 {
				w := s[i : i+8]
				if class[w[0]]|class[w[1]]|class[w[2]]|class[w[3]]|class[w[4]]|class[w[5]]|class[w[6]]|class[w[7]] != 0 {
					break
				}
			}
			if i == len(s) {
				break
			}
		}
		if st = int(next[st*width+int(class[s[i]])]); st >= from {
			return false
		}
	}
	return true
}

// readSentence is one sentence being read: the text, whether it is all
// ASCII or plain (where prefilters hold), which literals its lower case holds, and
// the cues whose need it meets.
type readSentence struct {
	text  string
	ascii bool
	// plain: ASCII, or with neither a Kelvin sign nor a long s (folded text
	// has none), the two characters outside ASCII that (?i) matches with an
	// ASCII letter: an ASCII literal of a match is then in the lower case,
	// and the leads (which read ASCII bytes, as \w, \s and the letters of
	// (?i) do there) hold.
	plain bool
	found []uint64
	seen  *entered // the automaton's states entered (literals.scanFrom)
	// scanned: seen holds the sentence's states. The partial read keeps
	// none (scanHot): complete scans the sentence again.
	scanned bool
	met     []uint64 // the cues whose need it meets
	may     []uint64 // those that may hold (their prefilters and leads too)
	// partial: only the cues that address the model were read (found has
	// only their literals), and none of them may hold, so that none may
	// (may is empty); complete reads the rest.
	partial bool
	left    []uint64 // those score has not asked yet
	// The text with its ASCII letters lowered, and after a blank (for
	// anchors), made when an anchor first needs them (made).
	lower, padded []byte
	made          bool
}

// read reads s.text, which the caller sets (a store into the caller's own
// variable costs no write barrier while the collector marks; one through
// s would, for every sentence). A sentence is a finding only when a cue
// that addresses the model holds in it, and what it scores otherwise only
// counts when one does (see checkString): those cues are asked first, from
// their literals alone, and a sentence where none may hold is read no
// further (partial) unless score or failed needs it (complete).
func (x *resultIndex) read(s *readSentence) {
	x.reset(s, isASCII(s.text))
	x.lits.scanHot(s.scanText(), x.addrFrom, s.found, x.addrOut, x.addrOutAt)
	for w, a := range x.addrAssumed {
		s.found[w] |= a
	}
	x.meet(s, true)
	x.lead(s)
	s.partial = true
	for _, set := range s.may {
		if set != 0 {
			x.complete(s)
			return
		}
	}
}

// complete reads the rest of a partial sentence: every literal, every cue.
func (x *resultIndex) complete(s *readSentence) {
	if !s.partial {
		return
	}
	s.partial = false
	clear(s.found) // the literals taken as found
	if !s.scanned {
		x.lits.scanFrom(0, s.scanText(), s.seen)
		s.scanned = true
	}
	x.lits.collect(s.seen, s.found)
	x.meet(s, false)
	x.lead(s)
}

// lead drops from s.may the cues whose lead is false of s (a plain
// sentence).
func (x *resultIndex) lead(s *readSentence) {
	if !s.plain {
		return
	}
	cues := resultCues()
	for _, i := range x.leads {
		if s.may[i/64]&(1<<(i%64)) != 0 && !cues[i].lead(s.text) {
			s.may[i/64] &^= 1 << (i % 64)
		}
	}
}

// scanText is what the automaton reads of s: its text, whose ASCII letters
// it lowers itself, or outside ASCII its lower case.
func (s *readSentence) scanText() string {
	if s.ascii {
		return s.text
	}
	return strings.ToLower(s.text)
}

// reset makes s its text (s.text), ASCII or not, with no literal found.
func (x *resultIndex) reset(s *readSentence, ascii bool) {
	s.ascii = ascii
	s.plain = s.ascii || !s.anchorless()
	s.made, s.partial, s.scanned = false, false, false
	if s.found == nil {
		s.found = make([]uint64, x.lits.words())
		s.seen = x.lits.newEntered()
	}
	clear(s.found)
	s.seen.clear()
}

// setTo makes *dst hold src's words, in place when it has room: a slice
// stored through a pointer costs a write barrier while the collector
// marks (two pointers shaded per store, a few per sentence), and
// (*dst)[:n] stored back into itself does not (only its length is written).
func setTo(dst *[]uint64, src []uint64) {
	if cap(*dst) < len(src) {
		*dst = make([]uint64, len(src))
	}
	*dst = (*dst)[:len(src)]
	copy(*dst, src)
}

// meet sets s.met, the cues (those that address the model, or all) whose
// need s.found meets, and s.may, those of them whose prefilter s.found
// meets too.
func (x *resultIndex) meet(s *readSentence, addressing bool) {
	setTo(&s.met, x.free)
	for w, bitsSet := range s.found {
		if addressing {
			bitsSet &= x.addrNeed[w]
		} else {
			bitsSet &= x.needs[w]
		}
		for ; bitsSet != 0; bitsSet &= bitsSet - 1 {
			for _, i := range x.needed[w*64+bits.TrailingZeros64(bitsSet)] {
				s.met[i/64] |= 1 << (i % 64)
			}
		}
	}
	if addressing {
		for w := range s.met {
			s.met[w] &= x.addr[w]
		}
	}
	// A prefilter holds on ASCII, one of ASCII literals on a plain
	// sentence too; an anchor's expression matches only where one of its
	// starts is.
	setTo(&s.may, s.met)
	for w, set := range s.met {
		for ; set != 0; set &= set - 1 {
			b := bits.TrailingZeros64(set)
			i := w*64 + b
			if x.anchors[i].used(s) && !x.anchors[i].mayStart(s.found) || (s.ascii || s.plain && x.asciiPre[w]&(1<<b) != 0) && (!x.cuts[i].meets(s.found) || !x.pre[i].mayMatch(s.found)) {
				s.may[w] &^= 1 << b
			}
		}
	}
}

// mayHold reports whether cue i may hold in s: the sentence holds one of
// the cue's need words and may hold a match of its expression (its
// prefilter).
func (x *resultIndex) mayHold(i int, s *readSentence) bool {
	return s.may[i/64]&(1<<(i%64)) != 0
}

// mayScore reports whether some sentence of text (ASCII or not, as ascii
// says) may score a finding: the cues that may hold in text address the
// model and, with a frame of 1 where a sentence may frame the next, reach
// resultThreshold. The literals are read a piece at a time, until the
// cues found so far reach it (the literals found only grow): a text that
// may score costs its first piece or so, one that cannot a pass. Each
// piece is twice the one before, so that a long text is summed a few
// times, not once per piece.
func (x *resultIndex) mayScore(s *readSentence, text string, ascii bool) bool {
	s.text = text
	x.reset(s, ascii)
	// A sentence frames the next when a cue that frames holds in it (so
	// may hold in text), or when it ends with a colon: a colon before a
	// line break or the end, blanks between (see checkString).
	colonEnd := false
	for rest := text; !colonEnd; {
		i := strings.IndexByte(rest, ':')
		if i < 0 {
			break
		}
		rest = strings.TrimLeft(rest[i+1:], " \t")
		colonEnd = rest == "" || rest[0] == '\n' || rest[0] == '\r'
	}
	piece := mayScorePiece
	if len(text) < 3*mayScorePiece {
		// Read in one piece: a second would cost more (another
		// collect and meet, ~8 K instructions) than the rest of the
		// text a first one may spare reading.
		piece = len(text)
	}
	for at, st := 0, 0; at < len(text); piece *= 2 {
		end := min(at+piece, len(text))
		for end < len(text) && !utf8.RuneStart(text[end]) {
			end++ // a piece ends between characters
		}
		if piece := text[at:end]; s.ascii {
			st = x.lits.scanFrom(st, piece, s.seen) // the automaton lowers ASCII letters itself
		} else {
			st = x.lits.scanFrom(st, strings.ToLower(piece), s.seen)
		}
		at = end
		x.lits.collect(s.seen, s.found)
		x.meet(s, false)
		bound, addressed, framed := x.reach(s)
		if framed || colonEnd {
			bound++ // the frame the sentence before may give
		}
		if addressed && bound >= resultThreshold {
			return true
		}
	}
	return false
}

// mayScorePiece is the bytes mayScore reads before its first sum of the
// cues (all of a text shorter than three).
const mayScorePiece = 512

// reach sums the weights of the cues that may hold in s, and says whether
// one of them addresses the model and whether one frames the next
// sentence: what the sentence may score at most, without a frame.
func (x *resultIndex) reach(s *readSentence) (bound float64, addressable, frames bool) {
	for w, set := range s.may {
		addressable = addressable || set&x.addr[w] != 0
		frames = frames || set&x.frames[w] != 0
		for ; set != 0; set &= set - 1 {
			bound += x.weight[w*64+bits.TrailingZeros64(set)]
		}
	}
	return bound, addressable, frames
}

// kindBit is a bit per kind of finding (sentenceScore.kinds).
var kindBit = map[string]uint8{KindFakeTurn: 1, KindFakeError: 2, KindToolCall: 4, KindExfiltration: 8, KindSecretRequest: 16, KindInstruction: 32}

// sentenceScore is what the cues that hold in a sentence give: their
// score (without the frame of the sentence before), whether one addresses
// the model, whether one frames the next sentence, and their kinds (a
// kindBit each).
type sentenceScore struct {
	score            float64
	addressed, frame bool
	kinds            uint8
}

// score runs the expressions of the cues that may hold in s (read: s.may)
// until what is asked is known. With finding: whether s is one (its
// cues, with carry, the frame of the sentence before, reach
// resultThreshold and one of them addresses the model), and then, when it
// is, every cue's kind. With framing: whether s frames the next sentence
// (a cue that frames holds, or, ending with a colon, it scores at least 1
// with carry). What is not asked is not decided: the score returned is
// then no more than the whole (a sentence that cannot be a finding is not
// made one).
//
// Every cue that may hold is a question (its expression), and the order
// in which they are asked decides only what they cost, never the
// outcome: an expression that is not compiled yet costs its compiling (an
// anchored one never is: its program is data; the others are compiled at
// first use), one that is costs its run. While a finding is still possible,
// it asks first the cues that frame, when the frame is asked (each must be
// asked unless one holds), then the cheapest way to rule the finding out:
// the cues that may address the model, all of them, or the cues, the
// cheapest for their weight first, whose failing brings the score below
// the threshold. Most sentences of prose, meeting a few cues, end after
// one or two expressions that are compiled already.
func (x *resultIndex) score(s *readSentence, carry float64, finding, framing, colon bool) sentenceScore {
	var out sentenceScore
	x.complete(s)
	setTo(&s.left, s.may)
	bound, addrs, frames := 0.0, 0, 0
	for w, set := range s.left {
		addrs += bits.OnesCount64(set & x.addr[w])
		frames += bits.OnesCount64(set & x.frames[w])
		for ; set != 0; set &= set - 1 {
			bound += x.weight[w*64+bits.TrailingZeros64(set)]
		}
	}
	cues := resultCues()
	for bound > 0 {
		found := out.addressed && out.score+carry >= resultThreshold
		openFinding := finding && (found || out.score+bound+carry >= resultThreshold && (out.addressed || addrs > 0))
		openFrame := framing && !out.frame && (frames > 0 || colon && !(out.score > 0 && out.score+carry >= 1))
		if !openFinding && !openFrame {
			break
		}
		var i int
		switch {
		case openFrame && frames > 0:
			i = x.cheapest(s, x.frames)
		case !openFinding || found:
			i = x.cheapest(s, nil)
		default:
			i = x.ruleOut(s, out.score+bound+carry-resultThreshold, !out.addressed)
		}
		s.left[i/64] &^= 1 << (i % 64)
		c := &cues[i]
		bound -= c.weight
		if c.addr {
			addrs--
		}
		if c.frames() {
			frames--
		}
		if x.holds(i, s) {
			out.score += c.weight
			out.addressed = out.addressed || c.addr
			out.frame = out.frame || c.frames()
			out.kinds |= kindBit[c.kind]
		}
	}
	return out
}

// cost is what asking cue i of s costs: a run of its expression, and its
// compiling when it is not compiled yet (compileCost; an anchor's program
// is laid out by the linker).
func (x *resultIndex) cost(i int, s *readSentence) float64 {
	if x.anchors[i].used(s) || resultCues()[i].re.compiled() {
		return 1
	}
	return 1 + x.compileCost[i]
}

// cheapest returns the cue left in s (and in among, nil: any) that costs
// least to ask.
func (x *resultIndex) cheapest(s *readSentence, among []uint64) int {
	best, bestCost := -1, 0.0
	for w, set := range s.left {
		if among != nil {
			set &= among[w]
		}
		for ; set != 0; set &= set - 1 {
			i := w*64 + bits.TrailingZeros64(set)
			if c := x.cost(i, s); best < 0 || c < bestCost {
				best, bestCost = i, c
			}
		}
	}
	return best
}

// ruleOut returns the cue left in s to ask first to rule a finding out:
// the first of the cheaper of two ways, the cues that may address the
// model (when unaddressed: every one of them failing rules it out), or
// the cues whose weights, failing, sum to more than excess (the score
// possible over the threshold), the cheapest for their weight first.
func (x *resultIndex) ruleOut(s *readSentence, excess float64, unaddressed bool) int {
	type option struct {
		i          int
		cost, rate float64
	}
	var buf [64]option
	opts := buf[:0]
	addrCost, addrFirst, addrFirstCost := 0.0, -1, 0.0
	for w, set := range s.left {
		for ; set != 0; set &= set - 1 {
			b := bits.TrailingZeros64(set)
			i := w*64 + b
			c := x.cost(i, s)
			opts = append(opts, option{i, c, c / x.weight[i]})
			if unaddressed && x.addr[w]&(1<<b) != 0 {
				addrCost += c
				if addrFirst < 0 || c < addrFirstCost {
					addrFirst, addrFirstCost = i, c
				}
			}
		}
	}
	slices.SortFunc(opts, func(a, b option) int { return cmp.Compare(a.rate, b.rate) })
	weightCost, removed := 0.0, 0.0
	for _, o := range opts {
		weightCost += o.cost
		removed += x.weight[o.i]
		if removed > excess {
			break
		}
	}
	if addrFirst >= 0 && addrCost < weightCost {
		return addrFirst
	}
	return opts[0].i
}

// failedText reports whether text reports a failure (resultErrorWords).
func (x *resultIndex) failedText(text string) bool {
	s := readSentence{text: text}
	x.read(&s)
	return x.failed(&s)
}

// endsWithColon reports whether a sentence ends with a colon (blanks
// after it aside).
func endsWithColon(s string) bool { return strings.HasSuffix(strings.TrimSpace(s), ":") }

// failed reports whether s reports a failure (resultErrorWords).
func (x *resultIndex) failed(s *readSentence) bool {
	x.complete(s)
	if (s.ascii || s.plain && x.asciiError) && !x.errorWords.mayMatch(s.found) {
		return false
	}
	return x.errorAt.holds(resultErrorWords, s)
}

// holds reports whether cue i's expression matches s.
func (x *resultIndex) holds(i int, s *readSentence) bool {
	return x.anchors[i].holds(resultCues()[i].re, s)
}

// frames reports whether the cue, holding, frames the next sentence (see
// checkString).
func (c *resultCue) frames() bool {
	return c.frame || c.kind == KindFakeTurn || c.weight >= 2 && c.kind == KindInstruction
}

// Vocabulary shared by the cues.
const (
	// Who is told: you, the assistant, AI models, whoever reads this.
	reSubject = `(?:you|(?:the\s+|all\s+|any\s+|every\s+)?(?:ai\s+|llm\s+)?(?:assistants?|ai|agents?|models?|llms?|bots?|chatbots?)(?:'s)?|whoever\s+(?:reads|sees|processes)\s+this|the\s+reader)`
	// …with a modal that makes it an order.
	reYou      = `\b` + reSubject + `(?:'ll|\s+will)?\s+(?:must|should|need\s+to|have\s+to|has\s+to|needs\s+to|(?:are|is)\s+(?:now\s+)?(?:required|instructed|asked|expected|supposed|obliged|to)|will\s+need\s+to|shall|ought\s+to|may\s+now|now\s+need\s+to|now\s+must|can\s+only)\b`
	reToolVerb = `(?:call|calling|use|using|invoke|invoking|execute|trigger|utili[sz]e|employ|switch\s+to)`
	// A tool's name: snake_case, camelCase, or quoted.
	reIdent    = `['"“‘\x60]?(?-i:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]+)['"”’\x60]?`
	reSendVerb = `(?:send|post|upload|forward|e-?mail|transmit|submit|leak|exfiltrate|report|share|deliver|relay|beam|sync|push|copy|write|save|store|append|add|paste|put|include|attach|embed|dump|export)`
	// Secrets and private data.
	reSecret = `(?:passwords?|passphrases?|passcodes?|pins?\s+codes?|api[\s_-]?(?:keys?|tokens?)|access[\s_-]?keys?|access[\s_-]?tokens?|auth(?:entication|orization)?[\s_-]?(?:tokens?|codes?)|bearer\s+tokens?|session\s+(?:tokens?|cookies?|ids?)|cookies|secret[\s_-]?keys?|secrets|client[\s_-]?secrets?|private[\s_-]?keys?|ssh[\s_-]?keys?|id_rsa|id_ed25519|\.ssh\b|\.env\b|aws_secret|credentials?|2fa\s+codes?|otp|one[\s-]time\s+(?:codes?|passwords?)|recovery\s+codes?|seed\s+phrases?|mnemonic|wallet\s+keys?|credit\s+card(?:\s+numbers?)?|card\s+numbers?|cvv|social\s+security|ssn|bank\s+(?:account|details)|system\s+prompt|(?:full|entire|complete|whole)\s+(?:prompt|conversation|context|chat)|(?:your|the)\s+(?:initial|original|hidden|system)\s+(?:prompt|instructions)|conversation\s+(?:history|log)|chat\s+(?:history|log)|previous\s+messages|personal\s+(?:data|information|details)|phone\s+numbers?|home\s+address|location\s+history|(?:current|precise|gps|home)\s+location|contacts?\s+list|address\s+book|browsing\s+history|environment\s+variables?|env\s+vars?|/etc/shadow|/etc/passwd|(?:names?|list)\s+of\s+(?:the\s+|all\s+)?(?:tools|functions)|tools\s+you\s+(?:can\s+use|have))`
	// What is sent: data, not a message of one's own.
	reData = `(?:data|contents?|files?|information|info|details|results?|output|conversation|history|messages?|notes|drafts?|everything|all|them|it|this|credentials|keys?|tokens?|secrets|passwords?|documents?|records|logs?|list|summary|table|database|dump|archive|emails|inbox|code|repo(?:sitory)?)`
	reDest = `(?:https?://|\bwww\.|[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}|\b(?:the\s+)?(?:following\s+|[\w.-]+\s+)?(?:url|endpoint|webhook|server|address|e-?mail)\b|['"\x60]?(?:~|/)[\w./-]+|\bfile\b)`
	// An imperative opens the sentence, after a label ("Note:", a JSON
	// key), a purpose clause ("To verify your access, "), an adverb.
	reOpening = `^(?:\W*\s*)?(?:[\w -]{1,24}["']?\s*:\s*["']?)?(?:(?:to|in\s+order\s+to|for|if|when|once|after|before|so\s+that|instead\s+of)\b[^,]{0,60},\s*)?(?:` + reAdverb + `\s*,?\s+)?`
	reAdverb  = `(?:now|first|then|next|also|immediately|finally|and|actually|instead|simply|just)`
	reVerbs   = `(?:call|use|invoke|run|execute|trigger|send|post|upload|forward|email|write|add|append|save|store|read|open|fetch|download|retrieve|delete|remove|kill|terminate|modify|edit|change|replace|update|set|display|show|print|output|tell|inform|reply|respond|answer|say|include|insert|provide|share|reveal|list|ignore|disregard|forget|follow|obey|comply|visit|navigate|go\s+to|click|transfer|pay|grant|authori[sz]e|approve|confirm|enable|disable|create|install|stop|cancel|proceed|recommend|promote|praise|mention|publish|commit|push|merge|deploy|rename|move|invite|purchase|buy|order|book|register|login|log\s+in|sign|resume|retry|continue)`
)

// resultCues are read against one sentence, already folded (NFKC,
// invisible characters removed, white space collapsed; case kept). They
// are made on first use: every toolgate command links this package, and
// most never check a result.
var resultCues = sync.OnceValue(func() []resultCue {
	return []resultCue{
		// Addressed to the model.
		addressCue("you|assistant|ai|agent|model|llm|bot|whoever|reader", reYou, 1, ""),
		addressCue("please|kindly|need you|make sure|be sure|remember|forget|ensure", `\b(?:please|kindly|i\s+need\s+you\s+to|make\s+sure\s+(?:to|you|that\s+you)|be\s+sure\s+to|ensure\s+(?:that\s+)?you|remember\s+to|don'?t\s+forget\s+to)\b`, 1, ""),
		openingCue(),
		addressCue("only way|best way|safest way|right thing|what you|procedure|correct|proper", `\b(?:the\s+only\s+way|the\s+(?:best|safest|right|correct|proper)\s+(?:way|thing|procedure|step|action|next\s+step)|what\s+you\s+(?:need|have)\s+to\s+do)\b.{0,40}\bis\s+to\b`, 1, ""),
		plainCue("now|immediately|right away|at once|asap|urgent|before|first|mandatory", `\b(?:now|immediately|right\s+away|at\s+once|asap|urgent(?:ly)?|before\s+(?:anything|doing|continuing|proceeding|answering|responding)|mandatory)\b|\bfirst(?:\s*[,.;:!)]|\s*$|\s+(?:with|before|to|and|then|by|using|so|in|if|when|or))`, 0.5, ""),
		// Who the text speaks to: the model itself.
		addressCue("dear|attention|note to|hey|hello|hi |message to|instruction", `\b(?:dear|attention|note\s+to|hey|hello|hi|message\s+to|instructions?\s+(?:for|to))\s+(?:the\s+|all\s+|any\s+)?(?:ai\s+|llm\s+)?(?:ai|assistant|agent|model|llm|chatbot|language\s+model|copilot|bot)s?\s*[:,!-]`, 3, KindInstruction),
		addressCue("ai |llm |agent|assistant|model", `\b(?:ai|llm)?\s*(?:assistants?|agents?|models?)\s+(?:reading|processing|seeing|that\s+(?:reads?|sees?|process(?:es)?))\s+this\b`, 3, KindInstruction),
		led(addressCue("assistant|ai|agent|model|claude|gpt|chatbot|llm", `^\W{0,6}(?:dear\s+|hey\s+|hi\s+)?(?:the\s+)?(?:ai|assistant|agent|model|claude|gpt|chatbot|llm)\s*[,!]`, 2, KindInstruction), firstWord(6, `(?:dear|hey|hi|the|ai|assistant|agent|model|claude|gpt|chatbot|llm)`)),
		addressCue("as a", `\bas\s+an?\s+(?:ai|assistant|language\s+model|llm)\b.{0,40}\byou\b`, 2, KindInstruction),
		addressCue("after|when|once|upon", `\b(?:after|when|once|upon|as\s+soon\s+as)\s+(?:you\s+)?(?:reading|read|seeing|see|processing|process|receiving|receive)\s+this\b`, 1.5, KindInstruction),

		// What it wants done.
		plainCue("call|use|using|invok|execut|trigger|utili|employ|switch to|run", `\b(?:`+reToolVerb+`|run)\s+(?:the\s+)?(?:`+reIdent+`|['"\x60][\w.-]+['"\x60])\s+(?:tool|function|plugin|action)s?\b|\b`+reToolVerb+`\s+(?:the\s+)?`+reIdent, 1.5, KindToolCall),
		plainCue("by |with|via", `\b(?:by\s+(?:using|calling|invoking|running|executing)|with|via)\s+(?:the\s+)?`+reIdent+`(?:\s+tool)?|\bby\s+(?:using|calling|invoking|running)\s+(?:the\s+)?\S+\s+(?:tool|function)`, 1, KindToolCall),
		plainCue("plan|answer|response|steps", `\b(?:add|include|put)\s+`+reIdent+`\s+(?:in|into|to)\s+(?:the\s+|your\s+)?(?:final\s+)?(?:plan|answer|response|steps)`, 2, KindToolCall),
		plainCue("send|post|upload|forward|mail|transmit|submit|leak|exfiltrat|report|share|deliver|relay|beam|sync|push|copy|write|save|store|append|add|paste|put|include|attach|embed|dump|export", `\b`+reSendVerb+`\b.{0,60}?\b`+reData+`\b.{0,60}?\b(?:to|into|at|in)\s+`+reDest, 1.5, KindExfiltration),
		plainCue("http|@", `\b(?:send|post|upload|forward|e-?mail|transmit|submit|leak|exfiltrate|deliver|relay)\b.{0,40}?\b`+reData+`\b.{0,60}?(?:https?://|[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,})`, 1.5, KindExfiltration),
		plainCue("http", `\b(?:open|visit|navigate\s+to|go\s+to|browse\s+to|load|fetch|request|curl|wget|download)\s+(?:the\s+(?:url|link|page)\s+)?https?://`, 1.5, KindExfiltration),
		plainCue("http", `https?://\S*[?&][\w-]+=(?:\{[^}]*\}|<[^>]*>|\$\w+)`, 1.5, KindExfiltration),
		plainCue("env|/etc/|pass|pin|key|token|cookie|secret|id_rsa|id_ed25519|.ssh|.env|credential|2fa|otp|one-time|one time|recovery|seed|mnemonic|wallet|card|cvv|social security|ssn|bank|prompt|conversation|context|chat|instructions|history|log|previous messages|personal|phone|address|mail|location|contacts|tools|functions", `\b(?:give|send|share|provide|reveal|disclose|tell|show|print|output|paste|enter|include|write|copy|leak|dump|repeat|append|attach|upload|forward|reply\s+with|respond\s+with|answer\s+with|ask\s+(?:them|the\s+user|him|her|users?)\s+(?:for|to\s+(?:give|send|share|enter|type|provide)))\b.{0,50}?\b`+reSecret+`\b`, 2, KindSecretRequest),
		plainCue("your|my |user", `\b(?:your|my|the\s+user'?s?|their)\s+(?:`+reSecret+`|e-?mail\s+address(?:es)?)\b`, 0.5, KindSecretRequest),
		plainCue("kill|terminat|delet|remov|eras|wipe|destroy|drop|truncat|format|shut|reboot|uninstall|disabl|overwrit|encrypt|chmod|chown", `\b(?:kill|terminate|delete|remove|erase|wipe|destroy|drop|truncate|format|shut\s*down|reboot|uninstall|disable|overwrite|encrypt|chmod|chown)\b.{0,40}?\b(?:process(?:es)?|pid|files?|folders?|director(?:y|ies)|database|tables?|repo(?:sitory)?|branch|account|users?|backups?|logs?|everything|all|system|disk|records?|emails?)\b`, 1.5, KindInstruction),
		plainCue("rm |curl|wget|sudo|authorized_keys|crontab|.bashrc|chmod|download", `\b(?:rm\s+-rf|chmod\s+(?:-r\s+)?[0-7]{3}|curl\s+[^|]{0,80}\|\s*(?:ba)?sh|wget\s+[^|]{0,80}\|\s*(?:ba)?sh|sudo\s+\w+|authorized_keys|crontab|\.bashrc)\b|\bdownload\b.{0,40}?\b(?:and\s+)?(?:execute|run|install)\b`, 1.5, KindInstruction),
		plainCue("password|2fa|mfa|recovery|permission|role|owner", `\b(?:change|reset|set|update|disable|remove|turn\s+off)\s+(?:the\s+|their\s+|his\s+|her\s+|the\s+user'?s\s+|all\s+)?(?:passwords?|2fa|mfa|recovery\s+(?:email|phone)|permissions?|roles?|owners?)\b`, 1.5, KindInstruction),
		plainCue("send|transfer|wire|pay", `\b(?:send|transfer|wire|pay)\s+(?:\$|€|£)?\d|\b(?:transfer|wire)\s+(?:the\s+)?(?:money|funds|payment|balance)`, 1.5, KindInstruction),
		plainCue("ssh-", `\bssh-(?:rsa|ed25519|dss)\s+AAAA`, 1.5, KindInstruction),
		plainCue("following", `\b(?:add|write|append|insert|put|save)\s+(?:the\s+)?following\s+(?:content|text|line|data|key|code)\b`, 1.5, KindInstruction),
		plainCue("message|user|with", `\b(?:display|show|print|output|say|tell|inform|notify|respond|reply|answer|recommend|mention|state|report)\b.{0,30}?\b(?:the\s+(?:following\s+)?message|to\s+the\s+user|the\s+user\s+that|users?\s+with|with\s+(?:the\s+)?(?:following|exactly))\b`, 1, KindInstruction),
		plainCue("recommend|prefer|promote|praise", `\b(?:only\s+recommend|recommend\s+only|always\s+recommend|prefer\s+(?:only\s+)?\w+\s+over|promote|praise|speak\s+(?:positively|highly)\s+of)\b`, 1, KindInstruction),
		plainCue("plan|answer|response|reply|output", `\b(?:your|the)\s+(?:final\s+)?(?:plan|answer|response|reply|output)\s+(?:you\s+make|must|should)\b`, 1, KindInstruction),
		plainCue("the user", `\b(?:when|once|if|whenever)\s+the\s+user(?:'s)?\s+(?:asks?|requests?|query|queries|question|mentions?|says?|wants?)\b`, 1.5, KindInstruction),
		plainCue("every|all|each|now on|always|henceforth|future", `\b(?:for|in|on|to|before|after)\s+(?:every|all|each|any)\s+(?:future\s+|subsequent\s+|later\s+|following\s+|other\s+)?(?:requests?|calls?|quer(?:y|ies)|turns?|messages?|conversations?|tasks?|repl(?:y|ies)|responses?|answers?)\b|\bfrom\s+now\s+on\b|\bhenceforth\b|\balways\s+(?:use|call|prefer|choose|recommend)\b`, 1, KindInstruction),

		// How injections frame it.
		addressCue("ignore|disregard|forget|override|bypass|discard|abandon", `\b(?:ignore|disregard|forget|override|bypass|discard|abandon)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+|these\s+|those\s+)?(?:previous|prior|above|earlier|preceding|original|initial|system|former|existing|current|other)\s+(?:\w+\s+)?(?:instructions?|prompts?|rules|directions|guidelines|tasks?|context|messages?|commands|constraints|requests?|goals?)\b`, 3, KindInstruction),
		addressCue("ignore|disregard|forget|abandon", `\b(?:ignore|disregard|forget|abandon)\s+(?:all\s+)?(?:of\s+)?your\s+(?:\w+\s+)?(?:instructions?|prompts?|tasks?|questions?|requests?|rules|guidelines|goals?)\b|\b(?:ignore|disregard|forget|abandon)\s+(?:the|that|this)\s+(?:question|task|request|instructions?|prompt)\s+(?:you\s+(?:were|was|have\s+been)\s+given|you\s+received|from\s+the\s+user)`, 3, KindInstruction),
		addressCue("ignore|disregard|forget", `\b(?:ignore|disregard|forget)\s+(?:all|everything)\s+(?:you|that|previous|prior|above|else|before)\b`, 3, KindInstruction),
		addressCue("cancel|scratch|forget", `\b(?:actually,?\s+)?(?:cancel|scratch|forget)\s+(?:that|this|it|the\s+previous)\b\s*(?:,|and|;|\.)`, 1.5, KindInstruction),
		addressCue("rule|restriction|guideline|safety|filter|polic|guardrail|limit", `\b(?:rules|restrictions|guidelines|safety|filters?|polic(?:y|ies)|guardrails|limits|safeguards)\b.{0,30}?\b(?:are|is|have\s+been|has\s+been)\s+(?:now\s+)?(?:suspended|disabled|lifted|removed|off|overridden|waived|no\s+longer\s+(?:apply|in\s+effect))`, 2.5, KindInstruction),
		addressCue("outdated|obsolete|invalid|cancel|revoked|superseded|replaced|void|wrong|no longer", `\b(?:your|the|all)\s+(?:previous|prior|original|earlier|current|old|initial|system)\s+(?:instructions?|tasks?|rules|prompts?|guidelines|directions)\s+(?:are|is|have\s+been|has\s+been|were|was)\s+(?:now\s+)?(?:outdated|obsolete|invalid|cancell?ed|revoked|superseded|replaced|void|wrong|no\s+longer\s+valid)`, 2.5, KindInstruction),
		addressCue("strictly|carefully|exactly|precisely", `\b(?:strictly|carefully|exactly|precisely)\s+(?:adhere\s+to|follow|obey|comply\s+with|execute|perform|carry\s+out)\b`, 2, KindInstruction),
		addressCue("following|comply", `\b(?:adhere\s+to|obey|comply\s+with|execute|carry\s+out|perform|do|complete)\s+the\s+following\s+(?:instructions?|steps?|commands?|directions?|tasks?|actions?)?\s*(?:first|immediately|now|before|:)|\bcomply\s+with\s+(?:any|every|all|the\s+following|these|this)\b`, 2, KindInstruction),
		addressCue("task|request|question|assignment|job|instruction", `\b(?:the\s+)?(?:previous|prior|original|current|earlier|first|old)\s+(?:task|request|question|assignment|job|instructions?)\s+(?:has\s+been|have\s+been|is|was|are)\s+(?:completed|done|finished|cancell?ed|resolved|no\s+longer|obsolete|replaced|void)`, 2.5, KindInstruction),
		addressCue("task|goal|objective|instruction|mission|priorit", `\b(?:your|the)\s+(?:task|goal|objective|instructions?|mission|priorit(?:y|ies))\s+(?:has|have)\s+(?:now\s+)?(?:changed|been\s+(?:updated|changed|replaced))|\bthe\s+(?:real|actual|true|new)\s+(?:task|goal|objective|instruction|request)\s+is\b|\byour\s+new\s+(?:task|goal|objective|instructions?|mission)\b`, 2.5, KindInstruction),
		addressCue("task|request|priority|objective|assignment|instruction", `\b(?:more\s+urgent|urgent|new|different|updated|another|additional|higher[\s-]priority)\s+(?:new\s+)?(?:task|request|priority|objective|assignment|instructions?)\b.{0,40}?\b(?:you|first|complete|need|must|instead)\b`, 2, KindInstruction),
		addressCue("before", `\bbefore\s+(?:you\s+)?(?:can\s+|continue\s+to\s+|proceed\s+to\s+)?(?:solve|complete|answer|continue|proceed|respond|finish|do|start|handle|work\s+on|return\s+to|get\s+back\s+to)\b.{0,40}?\b(?:task|request|question|query|analysis|original|this|that)\b`, 2, KindInstruction),
		plainCue("after you", `\bafter\s+you\s+(?:do|have\s+done|complete|finish)\s+(?:that|this|it)\b`, 1.5, KindInstruction),
		addressCue("to be", `\b(?:requires?|needs?|depends\s+on)\s+(?:that\s+)?.{0,50}?\bto\s+be\s+(?:called|invoked|run|executed|used|completed|performed)\s+(?:first|before|beforehand|prior)`, 2.5, KindFakeError),
		plainCue("first|before", `\b(?:must|should|needs?\s+to)\s+(?:first\s+)?(?:be\s+)?(?:call(?:ed)?|invoke[d]?|run|use[d]?)\b.{0,50}?\b(?:first|before(?:\s+(?:this|continuing|proceeding|using))|beforehand)\b`, 1.5, KindToolCall),
		plainCue("retry|try again|continue", `\b(?:then|and\s+then|before\s+you)\s+(?:retry|try\s+again|call\s+(?:me|this|it)\s+again|continue)\b`, 1, KindFakeError),
		plainCue("no longer", `\b(?:is|has\s+been)\s+no\s+longer\s+(?:available|supported|in\s+use|working|valid)`, 1.5, KindToolCall),
		plainCue("replaced|superseded|deprecated|moved|migrated|renamed", `\b(?:has\s+been|was|is\s+now|have\s+been)\s+(?:replaced|superseded|deprecated|moved|migrated|renamed)\s+(?:by|to|with)\b`, 1, KindToolCall),
		plainCue("in order", `\bin\s+order\s+to\s+(?:complete|continue|proceed|finish|get|obtain|see|view|access|retrieve|display|unlock|perform|solve|ensure|enable|resolve|fulfil+)\b`, 1.5, ""),
		plainCue("continue|proceed|required", `\bto\s+(?:continue|proceed)\b|\b(?:continue|proceed)\s+(?:only\s+)?after\b|\bis\s+required\s+(?:to|before|for)\b`, 1, ""),
		addressCue("user|human|person|operator|owner|customer", `\b(?:(?:do\s+not|don'?t|never)\s+(?:ever\s+)?(?:tell|inform|notify|mention|alert|let|show|reveal|disclose|ask|confirm|bother|warn)|without\s+(?:ever\s+)?(?:telling|informing|notifying|mentioning|alerting|letting|showing|revealing|disclosing|warning))\s+(?:it\s+|this\s+|that\s+|anything\s+|them\s+)?(?:to\s+)?(?:the\s+|your\s+)?(?:user|human|person|operator|owner|customer)s?\b`, 3, KindInstruction),
		addressCue("reveal|mention|disclose|show|tell|repeat", `\b(?:do\s+not|don'?t|never)\s+(?:reveal|mention|disclose|show|repeat|acknowledge|tell\s+(?:anyone|the\s+user)\s+about)\s+(?:this|these|the|that)\s+(?:instructions?|message|note|notice|text|rules?|request|warning|comment)\b`, 3, KindInstruction),
		plainCue("confirmation|confirming|asking|approval|permission", `\bwithout\s+(?:asking\s+(?:for\s+)?|seeking\s+|waiting\s+for\s+|any\s+|further\s+|user\s+)?(?:confirmation|confirming|asking|approval|permission)\b|\bno\s+need\s+to\s+(?:ask|confirm|check\s+with)\b`, 1.5, KindInstruction),
		addressCue("pre-author|preauthor|pre-approv|preapprov|consented|given", `\bthe\s+user\s+(?:has\s+)?(?:already\s+)?(?:pre-?authori[sz]ed|pre-?approved|consented\s+to|given\s+(?:full\s+)?(?:permission|consent))`, 2.5, KindFakeTurn),
		addressCue("secretly|silently|quietly|covertly|discreetly", `(?:^\W*|\b(?:you|and|then|must|should|please|to|now|also)\s+|[,;:]\s*)(?:secretly|silently|quietly|covertly|discreetly)\s+(?:call|send|run|execute|use|write|add|forward|copy|upload|include|delete)\b`, 3, KindInstruction),
		plainCue("secretly|silently|quietly|covertly|discreetly", `\b(?:secretly|silently|quietly|covertly|discreetly)\b`, 1, KindInstruction),
		addressCue("keep|the user", `\bkeep\s+(?:this|it|that)\s+(?:a\s+)?(?:secret|hidden|confidential|private)\s+from\b|\bthe\s+user\s+(?:does\s+not|doesn'?t|must\s+not|should\s+not|need\s+not)\s+(?:need\s+to\s+)?(?:know|see|be\s+(?:told|informed))\b`, 3, KindInstruction),
		{need: []string{"<"}, addr: true, re: compileMatch(`(?i)<\s*/?\s*(?:important|critical|urgent|system|instructions?|information|admin|attention|priority|secret|hidden|assistant|directive|command|override|system[\s_-]?prompt)\s*>`), weight: 1.5, frame: true},
		led(plainCue("", `^\W{0,4}(?:important|critical|urgent|attention|warning|note)\s*(?:!|:)\s`, 0.5, ""), firstWord(4, `(?:important|critical|urgent|attention|warning|note)`)),

		// Fake turns and fake authors.
		addressCue("<|[inst|[/inst|<<sys|<</sys|_of_turn|endoftext|eot_id|im_start|im_end", `<\|[a-z_]{2,40}\|>|(?-i:\[/?INST\])|<</?sys>>|<(?:start|end)_of_turn>|<\|?(?:endoftext|eot_id|im_start|im_end)\|?>`, 3, KindFakeTurn),
		addressCue("user|system|admin|developer|human|operator", `\b(?:new|next|updated|latest|follow[\s-]?up|another|additional|real|actual|urgent)\s+(?:user|system|admin|administrator|developer|human|operator)\s+(?:message|query|request|prompt|instructions?|input|turn|command)s?\s*:`, 3, KindFakeTurn),
		led(addressCue("system|user|assistant|human|developer|admin", `^\s*(?:<!--\s*)?(?:#{1,4}\s*|\[|\(|<)?(?:system|user|assistant|human|developer|admin|administrator)\s*(?:message|prompt|note|notice|override|instruction|query|input|turn)?\s*(?:\]|\)|>|:)`, 1.5, KindFakeTurn), firstWord(-1, `(?:system|user|assistant|human|developer|admin|administrator)`)),
		led(addressCue("#", `^\s*#{2,4}\s*(?:instructions?|response|system|input)\s*:?\s*$`, 1.5, KindFakeTurn), firstWord(-1, `(?:instruction|response|system|input)`)),
		addressCue("from", `\b(?:message|note|request|instructions?|order|word)s?\s+(?:is\s+)?from\s+(?:the\s+|your\s+)?(?:user|system|admin|administrator|developer|operator|owner|assistant|human|security\s+team)\b`, 2.5, KindFakeTurn),
		addressCue("i am|signed", `\bi\s+am\s+(?:the|your)\s+(?:user|admin|administrator|developer|owner|operator|creator|supervisor)\b|\bsigned\s*,?\s*(?:the\s+)?(?:user|admin|administrator|developer|owner|system)\b`, 3, KindFakeTurn),
		addressCue("the user|i gave you", `\bthe\s+user\s+(?:has\s+)?(?:asked|wants|instructed|requested|authori[sz]ed|approved|told)\s+(?:you|that\s+you)\b|\b(?:the\s+)?task\s+(?:that\s+)?i\s+gave\s+you\b`, 2.5, KindFakeTurn),
	}
})

// resultErrorWords mark a text (or a sentence) that reports a failure.
var resultErrorWords = compileMatch(`(?i)\b(?:error|errors|failed|failure|exception|denied|locked|expired|unauthori[sz]ed|forbidden|not\s+authori[sz]ed|access\s+(?:is\s+)?required|authentication\s+(?:is\s+)?required|invalid|timed?\s*out|unavailable|could\s+not|cannot)\b`)

// scratch holds sentences that mayScore read a text into and that no
// check uses any more: reading a text needs a sentence's slices (four of
// them: the literals found, the states entered, the cues met, those that
// may hold; a long text's marks come from stateBytes), which a sentence
// from here already has,
// sized for the index (reset clears them). A sentence given back keeps no
// text, and its lower and padded copies only up to maxScratch bytes.
var scratch = sync.Pool{New: func() any { return new(readSentence) }}

// maxScratch bounds the lower-case copies a sentence in scratch keeps.
const maxScratch = 4 << 10

// resultHit is one sentence that scored.
type resultHit struct {
	kind, evidence string
}

// checkString returns the injections found in one string of a result.
func checkString(s string) []resultHit {
	if len(s) > resultMaxBytes {
		s = s[:resultMaxBytes]
	}
	x := theResultIndex()
	if x.unaddressed(s) {
		return nil
	}
	var hits []resultHit
	text, ascii := s, folded(s)
	if !ascii { // else ASCII: no hidden character, nothing to fold
		if h, ok := hiddenChars(s); ok {
			hits = append(hits, h)
		}
		text = resultFold(s)
		if tags := tagText(s); tags != "" {
			text += "\n" + resultFold(tags)
		}
	}
	// A sentence is a finding when cues that address the model add up to
	// the threshold, with a frame from the sentence before (carry) at
	// most 1. A cue that may hold in a sentence may hold in the whole
	// text (its words and prefilter's literals occur there too), so when
	// the cues that may hold anywhere cannot add up, no sentence can: data
	// and most plain text stop here, after one pass over the literals,
	// with a sentence whose slices an earlier check made (scratch).
	sp := scratch.Get().(*readSentence)
	if !x.mayScore(sp, text, ascii || isASCII(text)) {
		sp.text = ""
		if cap(sp.padded) > maxScratch {
			sp.lower, sp.padded, sp.made = nil, nil, false
		}
		scratch.Put(sp)
		return hits
	}
	sent := *sp // the text may score: sent has sp's slices, and sp is not put back
	s0, sentences := text, splitSentences(text)
	seen := map[string]bool{}
	carry := 0.0 // 1 when the sentence before frames this one
	var next readSentence
	next.text = sentences[0]
	x.read(&next)
	nextBound, nextAddr, _ := x.reach(&next)
	for n, text := range sentences {
		sent, next = next, sent
		reach, addressable := nextBound, nextAddr
		// The next sentence is read one ahead. A sentence that cannot reach
		// the threshold itself, and whose frame the next cannot use (it
		// cannot reach it either, with a frame, nor end with a colon, where
		// its own frame would depend on it), is read no further.
		uses := false
		if n+1 < len(sentences) {
			next.text = sentences[n+1]
			x.read(&next)
			nextBound, nextAddr, _ = x.reach(&next)
			uses = nextAddr && nextBound+1 >= resultThreshold || endsWithColon(sentences[n+1])
		}
		finding := addressable && reach+carry >= resultThreshold
		if !uses && !finding {
			carry = 0
			continue
		}
		colon := endsWithColon(text)
		sc := x.score(&sent, carry, finding, uses, colon)
		score := sc.score
		if score > 0 {
			score += carry
		}
		// A tag, a fake turn, an override, or "…do the following first:"
		// frames the next sentence.
		carry = 0
		if sc.frame || colon && score >= 1 {
			carry = 1
		}
		if score < resultThreshold || !sc.addressed {
			continue
		}
		// A failure reported in the first line, in the sentence before or in
		// the sentence itself makes its orders a fake error.
		fake := x.failed(&sent) || n > 0 && x.failedText(sentences[n-1]) || x.failedText(firstLine(s0))
		kind := KindInstruction
		switch kinds := sc.kinds; {
		case kinds&kindBit[KindFakeTurn] != 0:
			kind = KindFakeTurn
		case kinds&kindBit[KindExfiltration] != 0:
			kind = KindExfiltration
		case kinds&kindBit[KindSecretRequest] != 0:
			kind = KindSecretRequest
		case kinds&kindBit[KindFakeError] != 0 || fake:
			kind = KindFakeError
		case kinds&kindBit[KindToolCall] != 0:
			kind = KindToolCall
		}
		if seen[kind] {
			continue
		}
		seen[kind] = true
		hits = append(hits, resultHit{kind, resultClip(text)})
	}
	return hits
}

// resultFold is what the cues read: NFKC, invisible characters dropped,
// runs of blanks made one space (line breaks kept). The normalized text
// is folded a piece at a time as nfkc gives it, not kept whole first.
func resultFold(s string) string {
	if folded(s) {
		return s
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	f := &folder{}
	f.b.Grow(len(s))
	nfkc(s, f.fold)
	return f.b.String()
}

// folder folds text given a piece at a time (whole characters), as
// resultFold does: blank says the last byte written is a space.
type folder struct {
	b     strings.Builder
	blank bool
}

// fold folds s after what it folded before.
func (f *folder) fold(s string) {
	b, blank := &f.b, f.blank
	for i := 0; i < len(s); {
		if j := plainWords(s, i, blank); j > i { // copied as they are
			b.WriteString(s[i:j])
			i, blank = j, s[j-1] == ' '
			continue
		}
		// The next eight bytes are not all plain: one at a time (a
		// character at a time outside ASCII) before plainWords looks again.
		for stop := min(i+8, len(s)); i < stop; {
			if c := s[i]; c < utf8.RuneSelf { // ASCII: no invisible character
				i++
				switch c {
				case '\n':
					b.WriteByte('\n')
					blank = false
				case ' ', '\t', '\v', '\f', '\r':
					if !blank {
						b.WriteByte(' ')
					}
					blank = true
				default:
					b.WriteByte(c)
					blank = false
				}
				continue
			}
			r, n := utf8.DecodeRuneInString(s[i:])
			i += n
			switch {
			case resultInvisible(r):
				continue
			case r == '\n':
				b.WriteByte('\n')
				blank = false
			case unicode.IsSpace(r):
				if !blank {
					b.WriteByte(' ')
				}
				blank = true
			default:
				b.WriteRune(r)
				blank = false
			}
		}
	}
	f.blank = blank
}

// nfkc gives emit norm.NFKC.String(s) of valid UTF-8 in pieces, s
// normalized only where it leaves ASCII: every stretch of other
// characters with the ASCII byte before it (which a mark after it may
// join). An ASCII character begins a segment the normalization never
// reaches across (its class is 0 and no character composes with one after
// it), so the ASCII between the stretches is what the normalization of the
// whole would copy. A stretch already normalized (most) is given as it
// is. An ellipsis (…, common in prose) ends a stretch and is given as
// "...", what NFKC makes of it: the normalization would then compose, and
// its first composition in a process builds a table (0.6 M instructions)
// for what cannot happen here, as no character composes with a '.'
// before it (TestNFKCStretches).
func nfkc(s string, emit func(string)) {
	last := 0
	for i := nonASCII(s); i < len(s); {
		start := max(i-1, last)
		end := i
		for end < len(s) && s[end] >= utf8.RuneSelf && !strings.HasPrefix(s[end:], ellipsis) {
			end++
		}
		emit(s[last:start])
		if end > i {
			emit(norm.NFKC.String(s[start:end]))
		} else {
			emit(s[start:end]) // ASCII
		}
		if strings.HasPrefix(s[end:], ellipsis) {
			emit("...")
			end += len(ellipsis)
		}
		last, i = end, end+nonASCII(s[end:])
	}
	emit(s[last:])
}

const ellipsis = "\u2026"

// folded reports whether resultFold leaves s as it is: ASCII (NFKC and
// valid, nothing invisible) with no blank but single spaces and line
// breaks. It reads sixteen bytes at a time, then eight (unfolded), then
// one. The sixteen are tested as unfolded tests eight, the space after a
// space by what is not a space: notSpace has a byte's high bit clear
// where the byte is a space, so a byte and the one before it (the word's
// first, the last of the word before) are both spaces where neither's
// bit is set in notSpace | notSpace<<8 | before>>56. One test for the
// sixteen: the answer is the same whichever word it comes from.
func folded(s string) bool {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	before := uint64(high) // the byte before s is no space
	i := 0
	for ; i+16 <= len(s); i += 16 {
		t := s[i : i+16]
		w, v := word(t), word(t[8:])
		nw := w ^ 0x20*ones + 0x7F*ones // high bit clear: a space
		nv := v ^ 0x20*ones + 0x7F*ones
		bw := (w + 0x77*ones) &^ (w + 0x72*ones) & (w ^ 0x0A*ones + 0x7F*ones) // \t \v \f \r
		bv := (v + 0x77*ones) &^ (v + 0x72*ones) & (v ^ 0x0A*ones + 0x7F*ones)
		pairs := (nw | nw<<8 | before>>56) & (nv | nv<<8 | nw>>56) // high bit clear: a space after a space
		if (w|v|bw|bv|^pairs)&high != 0 {
			return false
		}
		before = nv
	}
	space := ^before >> 56 & 0x80
	var bad uint64
	for ; i+8 <= len(s); i += 8 {
		if bad, space = unfolded(word(s[i:i+8]), space); bad != 0 {
			return false
		}
	}
	for after := space != 0; i < len(s); i++ {
		if !foldedByte(s[i], after) {
			return false
		}
		after = s[i] == ' '
	}
	return true
}

// plainWords returns the end of the words of eight bytes from i that
// resultFold leaves as they are (see folded), after a space or not; i when
// there are none.
func plainWords(s string, i int, afterSpace bool) int {
	var space uint64
	if afterSpace {
		space = 0x80
	}
	for ; i+8 <= len(s); i += 8 {
		var bad uint64
		if bad, space = unfolded(word(s[i:i+8]), space); bad != 0 {
			break
		}
	}
	return i
}

// unfolded returns the bytes of w (eight, read little-endian) that
// resultFold changes, each as its high bit: one above 0x7F, a blank it
// makes a space (\t \v \f \r, 0x09 and 0x0B to 0x0D: a line break, 0x0A,
// stays), a space after a space; space is 0x80 when the byte before w is a
// space, and so is last for w's last byte. Where every byte is below 0x80
// adding up to 0x7F carries into no other, so the tests are exact; where
// one is not, it alone makes the answer.
func unfolded(w, space uint64) (bad, last uint64) {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	blank := (w + 0x77*ones) &^ (w + 0x72*ones) // 0x09 to 0x0D
	notLF := w ^ 0x0A*ones + 0x7F*ones
	sp := ^(w ^ 0x20*ones + 0x7F*ones) // a space
	bad = (w | blank&notLF | sp&(sp<<8|space)) & high
	return bad, sp >> 56 & 0x80
}

// foldedByte reports whether c, after a space or not, is as resultFold
// leaves it.
func foldedByte(c byte, afterSpace bool) bool {
	return c < utf8.RuneSelf && c != '\t' && c != '\v' && c != '\f' && c != '\r' && !(c == ' ' && afterSpace)
}

// splitSentences cuts folded text into sentences, each with its own line
// start so that ^ anchors hold: after . ! ? (and a closing quote or
// bracket) before white space, at every run of line breaks, and between
// quoted JSON values (a quote, a comma or closing brace or bracket, and
// what opens the next). Each break ends where the expression
//
//	[.!?]+["'”’)\]]?\s+|\n+|["']\s*[,}\]]\s*["{\[]?
//
// would end its match; a cut by hand reads the text once instead of
// trying three branches at every byte.
func splitSentences(text string) []string {
	out := make([]string, 0, len(text)/32+1) // sentences of prose are longer: one allocation, mostly
	last := 0
	for i := 0; ; {
		if i = nextBreakStart(text, i); i == len(text) {
			break
		}
		end := sentenceBreak(text, i)
		if end < 0 {
			i++ // breaks start at ASCII bytes, never inside a character
			continue
		}
		// Trimmed as appended: each string stored costs a write barrier
		// while the collector marks.
		out = append(out, strings.TrimLeft(text[last:end], " "))
		last, i = end, end
	}
	return append(out, strings.TrimLeft(text[last:], " "))
}

// breakStarts are the bytes a sentence break starts with.
var breakStarts = [256]bool{'.': true, '!': true, '?': true, '\n': true, '"': true, '\'': true}

// nextBreakStart returns the index of the first byte from i on that a
// break starts with (breakStarts), or len(text): eight bytes at a time.
func nextBreakStart(text string, i int) int {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	for ; i+8 <= len(text); i += 8 {
		w := word(text[i:])
		// Each term's lowest bit is the first byte that is its character.
		a, b, c, d, e, f := w^'.'*ones, w^'!'*ones, w^'?'*ones, w^'\n'*ones, w^'"'*ones, w^'\''*ones
		m := ((a-ones)&^a | (b-ones)&^b | (c-ones)&^c | (d-ones)&^d | (e-ones)&^e | (f-ones)&^f) & high
		if m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(text) && !breakStarts[text[i]]; i++ {
	}
	return i
}

// sentenceBreak returns the end of the break that starts at i, or -1.
func sentenceBreak(text string, i int) int {
	switch c := text[i]; {
	case c == '.' || c == '!' || c == '?':
		j := i + 1
		for j < len(text) && (text[j] == '.' || text[j] == '!' || text[j] == '?') {
			j++
		}
		if end := spaces(text, j); end > j {
			return end
		}
		if r, n := utf8.DecodeRuneInString(text[j:]); strings.ContainsRune(`"'”’)]`, r) {
			if end := spaces(text, j+n); end > j+n {
				return end
			}
		}
	case c == '\n':
		j := i + 1
		for j < len(text) && text[j] == '\n' {
			j++
		}
		return j
	case c == '"' || c == '\'':
		j := spaces(text, i+1)
		if j < len(text) && (text[j] == ',' || text[j] == '}' || text[j] == ']') {
			j = spaces(text, j+1)
			if j < len(text) && (text[j] == '"' || text[j] == '{' || text[j] == '[') {
				j++
			}
			return j
		}
	}
	return -1
}

// spaces returns the end of the run of \s (ASCII white space) at i.
func spaces(text string, i int) int {
	for i < len(text) && strings.IndexByte(" \t\n\f\r", text[i]) >= 0 {
		i++
	}
	return i
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// resultInvisible reports a character that prints nothing: zero-width and
// other format characters (bidi controls, tags), and variation selectors.
func resultInvisible(r rune) bool {
	return r >= utf8.RuneSelf && unicode.Is(unicode.Cf, r) || r >= 0xFE00 && r <= 0xFE0F || r >= 0xE0100 && r <= 0xE01EF || r == 0x115F || r == 0x1160 || r == 0x3164
}

// hiddenChars finds characters that hide text from a person: tag
// characters outside an emoji flag, bidi embedding and override controls,
// and zero-width characters inside a Latin word or in runs. Zero-width
// joiners in emoji and scripts that need them, and a leading BOM, are
// ordinary.
func hiddenChars(s string) (resultHit, bool) {
	// Every character looked for is outside ASCII: start at the first
	// byte that is, as if the ASCII before had been read.
	start := nonASCII(s)
	if start == len(s) {
		return resultHit{}, false
	}
	var prev rune
	if start > 0 {
		prev = rune(s[start-1])
	}
	run := 0
	for i, n := start, 0; i < len(s); i += n {
		if s[i] < utf8.RuneSelf { // a run of ASCII: none of it hides, and it ends a run of zero-widths
			n = nonASCII(s[i:])
			prev, run = rune(s[i+n-1]), 0
			continue
		}
		var r rune
		r, n = utf8.DecodeRuneInString(s[i:])
		next, _ := utf8.DecodeRuneInString(s[i+n:])
		switch {
		case r >= 0xE0000 && r <= 0xE007F:
			if !inFlag(s, i) {
				return resultHit{KindHiddenText, "tag characters spelling " + resultClip(tagText(s))}, true
			}
		case r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069:
			return resultHit{KindHiddenText, fmt.Sprintf("bidi control U+%04X", r)}, true
		case r == 0x200B || r == 0x200C || r == 0x200D || r == 0x2060 || r >= 0x2061 && r <= 0x2064 || r == 0x180E || r == 0xFEFF && i > 0:
			run++
			if run >= 3 || isASCIIAlnum(prev) && isASCIIAlnum(next) {
				return resultHit{KindHiddenText, fmt.Sprintf("zero-width U+%04X inside text", r)}, true
			}
			continue
		}
		run = 0
		prev = r
	}
	return resultHit{}, false
}

// inFlag reports whether the tag character at i belongs to an emoji tag
// sequence: a black flag, up to seven tag letters, a cancel tag.
func inFlag(s string, i int) bool {
	start := i
	for start > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:start])
		if r < 0xE0000 || r > 0xE007F {
			break
		}
		start -= n
	}
	base, _ := utf8.DecodeLastRuneInString(s[:start])
	end, tags := start, 0
	for end < len(s) {
		r, n := utf8.DecodeRuneInString(s[end:])
		if r < 0xE0000 || r > 0xE007F {
			break
		}
		end += n
		tags++
		if r == 0xE007F {
			return base == 0x1F3F4 && tags <= 8
		}
	}
	return false
}

// tagText decodes tag characters (U+E0020-E007E) to the ASCII they mirror,
// "" when there are none.
func tagText(s string) string {
	if strings.IndexByte(s, 0xF3) < 0 {
		return "" // the UTF-8 of U+C0000-FFFFF, tags among them, starts with F3
	}
	var b strings.Builder
	for _, r := range s {
		if r >= 0xE0020 && r <= 0xE007E {
			b.WriteRune(r - 0xE0000)
		}
	}
	return b.String()
}

func isASCIIAlnum(r rune) bool {
	return r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// resultClip bounds evidence to 120 runes on one line.
func resultClip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 120 {
		r := []rune(s)
		s = string(r[:117]) + "..."
	}
	return s
}
