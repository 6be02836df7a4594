package selection

import (
	"slices"
	"strings"
)

// synonymGroups are words that name the same generic action or object in
// tool descriptions. Each line is a group; a query term from a group also
// looks for the others, at expansionWeight. Only synonyms belong here
// (words one tool's author writes where another writes the other), of the
// general vocabulary of software and its common objects: never an
// association (today → time), never a word of one catalogue.
const synonymGroups = `
get fetch retrieve obtain
read load open
search find query lookup seek
create make new add generate build
delete remove erase destroy
list enumerate browse
update modify edit change alter
write save store persist
run execute launch invoke
show display view render
send post publish submit
download fetch pull
upload push
image picture photo photograph pic img
folder directory dir
spreadsheet excel xlsx sheet workbook
presentation slide ppt pptx powerpoint deck
document docx word
chart plot graph diagram visualize visualization
website webpage page site url link web
article news story headline
trend trending hot popular top rank ranking
price cost quote
stock share ticker equity
weather forecast
location place address venue
route direction directions navigation
calculate compute evaluate math arithmetic
email mail
paper publication preprint article
video clip movie film
music song audio sound
repository repo
summary summarize abstract overview
translate translation
convert transform
code source script program
company organization organisation business
`

// synonyms returns, for each analysed term of synonymGroups, the other terms
// of its groups.
func synonyms(an *analyzer) map[string][]string {
	out := map[string][]string{}
	for _, line := range strings.Split(synonymGroups, "\n") {
		var group []string
		for _, w := range strings.Fields(line) {
			an.terms(w, func(t string, _ bool) { group = append(group, t) })
		}
		for _, a := range group {
			for _, b := range group {
				if a != b && !slices.Contains(out[a], b) {
					out[a] = append(out[a], b)
				}
			}
		}
	}
	return out
}
