package console

import (
	"net/http"
	"strings"
)

// Pin is an upstream tool as the gateway's pin file holds it (package
// trust): pinned, quarantined until a person approves it, or removed.
type Pin struct {
	Upstream, Tool string
	State          string // pinned, quarantined, removed
	Why            string // why it is quarantined
	Verdict        string // the poisoning scan's verdict ("" clean or not scanned)
	Diff           string // for a quarantined tool: what changed, and the scan's findings
	Target         string // what Approve takes to pin it (UPSTREAM/TOOL, or UPSTREAM/* for a changed upstream)
}

// Trust is the gateway's pin file, for the tools page.
type Trust interface {
	// Pins lists every pinned upstream tool.
	Pins() ([]Pin, error)
	// Approve pins what waits for approval in target (UPSTREAM/TOOL, or
	// UPSTREAM/* for a changed upstream with its waiting tools) on behalf
	// of by, and records it in the audit log.
	Approve(target, by string) error
}

// trustData adds the pin file's tools to the tools page's data.
func (c *Console) trustData(data map[string]any) {
	if c.o.Trust == nil {
		return
	}
	pins, err := c.o.Trust.Pins()
	if err != nil {
		data["TrustProblem"] = "The pin file cannot be read: " + err.Error() + "."
	}
	var quarantined int
	for _, p := range pins {
		if p.State == "quarantined" {
			quarantined++
		}
	}
	data["Pins"], data["Quarantined"], data["HasTrust"] = pins, quarantined, true
}

// approveTrust pins a quarantined tool on behalf of u (an approver).
func (c *Console) approveTrust(w http.ResponseWriter, r *http.Request, u User) {
	if !c.mayAnswer(u) {
		c.problem(w, r, http.StatusForbidden, &u, u.Name+" may read the console but not approve upstream tools.",
			"Ask an administrator for one of the roles of the policy's console.approvers (by default approver or admin).")
		return
	}
	if c.o.Trust == nil {
		c.problem(w, r, http.StatusNotFound, &u, "This server pins no upstream tools.", "")
		return
	}
	target := strings.TrimSpace(r.PostFormValue("target"))
	if up, tool, ok := strings.Cut(target, "/"); !ok || up == "" || tool == "" {
		c.problem(w, r, http.StatusBadRequest, &u, "Name what to approve as UPSTREAM/TOOL or UPSTREAM/*.", "")
		return
	}
	if err := c.o.Trust.Approve(target, "console:"+u.Name); err != nil {
		c.problem(w, r, http.StatusBadRequest, &u, "The approval was not taken: "+err.Error()+".", "Go back to the tools and look at what waits.")
		return
	}
	http.Redirect(w, r, "/ui/tools#trust", http.StatusSeeOther)
}
