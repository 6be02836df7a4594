package console

import (
	"net/http"
	"strings"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// toolRow is a tool on the tools page.
type toolRow struct {
	tool.Definition
	Upstream               string // the MCP server it comes from ("" built in)
	Rate, RatePerPrincipal policy.Rate
}

// SelectionRow is how well tool_search ranked in one week for one
// upstream: of the calls that followed a search by the same caller, the
// share (percent) whose tool the search ranked first, in its top 5, or did
// not find.
type SelectionRow struct {
	Week     string  `json:"week"`     // ISO week, 2026-W49
	Upstream string  `json:"upstream"` // "" for the built-in tools
	Calls    int     `json:"calls"`
	First    float64 `json:"first"`
	Top5     float64 `json:"top5"`
	NotFound float64 `json:"not_found"`
}

// call is a call by u, to ask what u is shown and allowed.
func (u User) call(name string, args []byte) tool.Call {
	return tool.Call{Name: name, Args: args, Principal: u.Name, Auth: u.Auth, Session: "console"}
}

// tools returns the tools u is shown, as the model sees them.
func (c *Console) tools(u User) []tool.Definition {
	if c.o.Tools == nil {
		return nil
	}
	return c.o.Tools(u.call("", nil))
}

func (c *Console) toolsPage(w http.ResponseWriter, r *http.Request, u User) {
	var rows []toolRow
	for _, d := range c.tools(u) {
		row := toolRow{Definition: d}
		for _, t := range d.Tags {
			if s, ok := strings.CutPrefix(t, "mcp:"); ok {
				row.Upstream = s
			}
		}
		if c.o.Policy != nil {
			row.Rate, row.RatePerPrincipal = c.o.Policy.Limits.ToolRates(d.Name)
		}
		rows = append(rows, row)
	}
	data := map[string]any{"Tools": rows, "NoCatalogue": c.o.Tools == nil}
	if c.o.Policy != nil {
		data["PerPrincipal"] = c.o.Policy.Limits.Principal
	}
	if c.o.Selection != nil {
		data["Selection"] = c.o.Selection()
	}
	c.trustData(data)
	data["SignIns"], data["SignInProblem"] = c.signIns(r.Context(), u)
	data["HasSignIns"] = c.o.SignIns != nil
	c.page(w, r, http.StatusOK, "tools", &u, data)
}
