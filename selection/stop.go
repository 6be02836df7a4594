package selection

import "strings"

// stopWords are English function words: articles, pronouns, auxiliaries,
// prepositions, conjunctions. Tool queries are requests ("could you help me
// find …"), so these words are frequent and say nothing about which tool
// fits. Content words stay, however frequent: IDF weighs those. The list is
// close to NLTK's, with which the README's plain BM25 floor is reproduced.
const stopWords = `a an and are as at be but by for if in into is it no not of on or such
that the their then there these they this to was will with
about above after again against all am any because been before being below between both
can could did do does doing down during each few from further had has have having he her
here hers herself him himself his how i its itself just me more most my myself nor now
off once only other our ours ourselves out over own same she should so some than theirs
them themselves those through too under until up very we were what when where which while
who whom why would you your yours yourself yourselves also may might must shall us let`

func stopSet(list string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(list) {
		set[w] = true
	}
	return set
}
