// Package eval measures tool selection: it loads a retrieval benchmark (a
// tool corpus and human-annotated tasks naming the tools they need) and
// scores any ranking function with Recall@5, Recall@10, nDCG@10 and
// completeness@10 at tool-name level. It knows nothing of how a ranking is
// made, so the lexical index, an embedding ranker and a hybrid are measured
// the same way.
package eval
