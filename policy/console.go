package policy

import (
	"fmt"
	"slices"
)

// Console is the console section of a policy file: who may use the web
// console that serve --http and proxy --http offer under /ui/ (package
// console). Roles are a caller's credential roles (a token's roles claim,
// an API key's roles) and its role in Principals. Without an auth block
// the local user is admin.
type Console struct {
	// Off serves no console.
	Off bool `yaml:"off,omitempty" json:"off,omitempty"`
	// Approvals sends the calls that ask a person, when the MCP client
	// cannot ask its user, to the console's approvals page (as
	// approvals.http does, whose queue the console shows too). Without
	// either such calls are refused at once.
	Approvals bool `yaml:"approvals,omitempty" json:"approvals,omitempty"`
	// Readers are the roles that may open the console and read it
	// (default reader, approver, admin). Approvers may always read.
	Readers []string `yaml:"readers,omitempty" json:"readers,omitempty"`
	// Approvers are the roles that may answer approvals (default
	// approver, admin).
	Approvers []string `yaml:"approvers,omitempty" json:"approvers,omitempty"`
}

// Default roles of the console section.
var (
	DefaultConsoleReaders   = []string{"reader", "approver", "admin"}
	DefaultConsoleApprovers = []string{"approver", "admin"}
)

// MayRead reports whether a caller with these roles may open the console.
func (c Console) MayRead(roles []string) bool {
	return c.MayAnswer(roles) || anyRole(roles, c.Readers, DefaultConsoleReaders)
}

// MayAnswer reports whether a caller with these roles may answer approvals.
func (c Console) MayAnswer(roles []string) bool {
	return anyRole(roles, c.Approvers, DefaultConsoleApprovers)
}

func anyRole(have, want, def []string) bool {
	if len(want) == 0 {
		want = def
	}
	for _, r := range have {
		if r != "" && slices.Contains(want, r) {
			return true
		}
	}
	return false
}

// checkConsole reports the first problem of a console section.
func checkConsole(c Console) (string, string) {
	for field, roles := range map[string][]string{"readers": c.Readers, "approvers": c.Approvers} {
		for _, r := range roles {
			if r == "" {
				return "$.console." + field, fmt.Sprintf("console.%s: an empty role name", field)
			}
		}
	}
	return "", ""
}

// ToolRates returns the rate limits of Tools and ToolPrincipal that apply
// to the tool name, as a Limiter picks them (the one glob rule); a zero
// Rate is none, and so is every rate of limits that do not Check.
func (l Limits) ToolRates(name string) (perTool, perToolPrincipal Rate) {
	tools, toolsP, err := l.Config().globMaps()
	if err != nil {
		return Rate{}, Rate{}
	}
	perTool, _, _ = tools.Lookup(name)
	perToolPrincipal, _, _ = toolsP.Lookup(name)
	return perTool, perToolPrincipal
}
