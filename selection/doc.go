// Package selection finds the few tools that fit a request among many: an
// embedded lexical index over tool.Definition values that needs nothing but
// the definitions. New builds an Index; Select(query, k) returns the k best
// definitions, best first. An Index is immutable and safe for concurrent use.
//
// # Ranking
//
// BM25F (Robertson and Zaragoza) over five fields of a definition: its name
// (and title), its description (and tags), the property names of its input
// schema, their titles and descriptions, and the bigrams of adjacent name
// terms ("beat track" of beat_track), so that a query holding a name's words
// in order ranks that tool above tools merely sharing one word. Default
// weights are 3, 1, 1, 0.5 and 1; k1 is 1.2 and b 0.75 (0 for bigrams). The
// weights follow what each field is: a tool's name is a short, deliberate
// summary of what it does, so a query word found there says most; the
// description says what it does at length; parameter names are short
// identifiers of what it acts on (city, repo, path); parameter descriptions
// are long and mostly about formats and defaults, so they count half. They
// were set before measuring; on LiveMCPBench any weights in a wide range
// (name 2 to 5, parameter descriptions 0.5 to 1, k1 0.9 to 1.6) score within
// about 1.5 points of each other, so they are not fitted to it.
//
// Each term's postings hold its whole BM25F score in each definition (IDF,
// weights, length normalisation, saturation), computed at build time; a
// query adds up postings into a dense score array and keeps the best k.
//
// # Text
//
// Text splits at every rune that is not a letter or digit (snake_case,
// kebab-case, dotted.names), inside words at case changes (camelCase,
// HTTPServer, but not IDs) and between letters and digits; a word split by
// case is also kept whole (LeetCode → leet, code, leetcode). Terms are
// lower-cased, English function words are dropped, and English words are
// reduced to their Snowball (Porter2) stems with github.com/kljensen/snowball,
// a maintained pure-Go implementation checked against Snowball's own
// vocabulary (a hand-written stemmer would be a few hundred lines of rules
// to get wrong). Han, Hiragana, Katakana and Hangul runs become overlapping
// character bigrams, the usual dictionary-free way to index CJK text.
// Schemas are untrusted: their walk reads three levels of properties (and
// items) and 128 parameters at most, skips values of the wrong type and
// never recurses deeper, whatever the input.
//
// # Query expansion
//
// A query term also looks, at 0.75 of its weight, for its synonyms among a
// short list of generic software vocabulary (get/fetch/retrieve,
// search/find/lookup, folder/directory, image/picture/photo, …), and a query
// holding a file path or file name also looks for "file", one holding a URL
// for "url": a request to save a report to /root/out/report.md needs a tool
// that writes files though it never says so. Repeating a word in a query
// adds nothing. Options turn off stemming or expansion, or make the index
// plain Okapi BM25, the reference floor of the benchmarks.
//
// # Server groups
//
// Options.Groups gives each definition a group (the MCP server or tool set
// it comes from). The best score in a group then lifts every member by
// Options.GroupWeight (0.2) of it: a task needs several tools of one server
// more often than not, and a sibling of the best match is a better guess
// than a stranger with one shared word. Tried and left out, because they
// lowered every figure on LiveMCPBench: RM3 pseudo-relevance feedback (3 to
// 10 feedback tools: R@5 −2 to −8) and diversifying across servers (R@5 −1
// to −6).
//
// # Tool search
//
// Defer hides the tools of a registry from the model (disables them) and
// returns a Deferred whose Tool is the tool_search meta-tool: the model calls
// tool_search(query) and the best matches are enabled, which an MCP server
// announces with notifications/tools/list_changed, and described in the
// result (name, description, input schema) for clients that do not re-list.
//
// # Learning from use
//
// A usage record (Usage) says that a caller searched for a query and then
// called a tool successfully. Index.Learn turns records into a Learned:
// each tool gets a usage document of the words of the queries that led to
// it, scored with BM25 (k1 1.2, b 0.75, IDF over the catalogue) and added
// to the text score by SelectLearned; Explain splits each result's score
// into text and use and names the principals behind the use. Without
// records, SelectLearned is Select, scores included.
//
// No caller steers the others: a principal's same query for the same tool
// counts once; a principal adds at most 1 to any (word, tool) and at most
// 32 to one tool's document, whatever it sends; once two principals or
// more taught anything, the strongest principal behind each (word, tool)
// is left out, so what counts is what others agree with. Records age
// (their weight halves every LearnOptions.HalfLife, 30 days), a record of
// a tool that is gone or whose definition changed (DefinitionHash) teaches
// nothing, and a query of more than 16 words teaches each word less.
//
// Online, a Deferred with DeferOptions.Learn pairs each caller's
// tool_search (principal and session) with the successful calls that
// follow it (Observe, fed the audit records by the CLI) and keeps the
// records in a UsageLog that every replica reads (package store: bbolt or
// Redis); a tool Learning.Boost refuses for a caller ranks by text alone.
//
// Measured with go run ./bench/selection -learn (splits by query, 20
// simulated principals): on MetaTool (199 tools, 20,614 queries), 10,000
// usage records rank 2,000 unseen queries at nDCG@10 84.6 against 49.9 for
// plain BM25 and 56.1 for the text alone; a term–tool association
// (P(tool | word), LearnAssociation) reaches 79.6. One principal's flood of
// 2,000 records pointing other tools' queries at one tool costs 0.0 points
// and puts it in no new top 3. On a pooled catalogue (LiveMCPBench,
// MetaTool sample, BFCL: 2,589 tools, 4,205 queries) with half of the
// queries as usage, the other half gains 11.7 points over plain BM25
// (57.1 → 68.8). With one query per tool and long multi-tool tasks
// (LiveMCPBench's own 53 held-out tasks) use does not help: 35.3 → 29.4.
//
// # Embeddings
//
// Embedder is a client of an OpenAI-compatible /v1/embeddings endpoint
// (plain net/http; vectors cached on disk by a hash of endpoint, model and
// text); NewHybrid fuses the lexical ranking with cosine similarity by
// reciprocal rank fusion. Nothing needs it: the lexical index is the default.
//
// # Measured
//
// On LiveMCPBench (527 tools, 94 tasks with gold; recipe and floor in the
// shared data README; package eval scores it and go run ./bench/selection
// prints it) the default scores R@5 41.8, R@10 52.0, nDCG@10 41.4 and
// completeness@10 30.9 (with the tools' servers as Groups: 43.1, 52.7,
// 42.2, 30.9), against 36.9, 46.1, 36.8 and 24.5 for plain BM25 as built
// here (the README's floor: 39.3, 46.4, 37.5, 24.5). Most of the
// gain is the expansion. What a lexical index cannot find is a tool
// described only in Chinese for an English request, and a tool a task needs
// without naming it (a browser's click for "find the price of …"); those
// need embeddings.
package selection
