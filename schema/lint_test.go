package schema

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

func readTools(t *testing.T, path string) []tool.Definition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tools []struct {
		Name, Description string
		InputSchema       json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(data, &tools); err != nil {
		t.Fatal(err)
	}
	var defs []tool.Definition
	for _, x := range tools {
		defs = append(defs, tool.Definition{Name: x.Name, Description: x.Description, InputSchema: x.InputSchema})
	}
	return defs
}

func TestLintBadTools(t *testing.T) {
	defs := readTools(t, filepath.Join("testdata", "bad_tools.json"))
	findings := Lint(defs, LintOptions{Provider: Gemini})
	has := map[string]Severity{}
	for _, f := range findings {
		key := f.Tool + f.Pointer + " " + f.Rule
		if _, seen := has[key]; !seen {
			has[key] = f.Severity
		}
		if f.Message == "" || f.Severity != SeverityInfo && f.Suggestion == "" {
			t.Errorf("finding without message or suggestion: %+v", f)
		}
	}
	want := map[string]Severity{
		"rf " + RuleNameCryptic:                                      SeverityError,
		"rf " + RuleNameDuplicate:                                    SeverityError,
		"rf " + RuleDescriptionMissing:                               SeverityError,
		"rf/properties/p " + RuleParamDescription:                    SeverityError,
		"tool_03 " + RuleNameCryptic:                                 SeverityError,
		"tool_03 " + RuleDescriptionMissing:                          SeverityError,
		"GetWeather " + RuleNameStyle:                                SeverityWarning,
		"GetWeather " + RuleDescriptionWhen:                          SeverityWarning,
		"GetWeather " + RuleDescriptionWhenNot:                       SeverityWarning,
		"GetWeather/properties/city " + RuleParamDescription:         SeverityError,
		"GetWeather/properties/units " + RuleParamEnum:               SeverityWarning,
		"GetWeather/properties/units " + RuleParamDefault:            SeverityWarning,
		"GetWeather/properties/days " + RuleParamType:                SeverityWarning,
		"get_weather_forecast " + RuleOverlap:                        SeverityError,
		"search.docs " + RuleNameInvalid:                             SeverityError,
		"broken_schema_tool " + RuleSchemaInvalid:                    SeverityError,
		"GetWeather/properties/days " + RuleProviderChange:           SeverityInfo,
		"get_weather_forecast/properties/city " + RuleParamDefault:   "",
		"get_weather_forecast " + RuleDescriptionWhenNot:             "",
		"search.docs/properties/query " + RuleParamDescription:       "",
		"broken_schema_tool " + RuleDescriptionWhen:                  "",
		"fetch_weather_forecast/properties/city " + RuleParamDefault: "",
	}
	for key, sev := range want {
		got, ok := has[key]
		switch {
		case sev == "" && ok:
			t.Errorf("%s: unexpected %s", key, got)
		case sev != "" && got != sev:
			t.Errorf("%s: got %q, want %s", key, got, sev)
		}
	}
	if t.Failed() {
		for _, f := range findings {
			t.Log(f)
		}
	}
	if findings[0].Severity != SeverityError || findings[len(findings)-1].Severity != SeverityInfo {
		t.Error("findings not sorted errors first")
	}
}

func TestLintGoodTools(t *testing.T) {
	defs := []tool.Definition{
		{Name: "search_orders", Description: "Find orders by customer, status or date range. Use it to answer questions about past orders; not for creating or changing orders (use update_order).",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"customer":{"type":"string","description":"customer id, e.g. C-1042"},"status":{"type":"string","enum":["open","shipped","cancelled"],"description":"only orders in this state; all states when left out"},"limit":{"type":"integer","minimum":1,"maximum":100,"default":20,"description":"orders to return at most"}},"required":["customer"]}`)},
		{Name: "update_order", Description: "Change the shipping address or cancel an open order. Use it when a customer asks for a change; never for shipped orders, which cannot change.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string","description":"the order, e.g. O-77"},"cancel":{"type":"boolean","default":false,"description":"cancel the order instead of changing it"}},"required":["order_id"]}`)},
	}
	for _, p := range append([]Provider{""}, Providers()...) {
		for _, f := range Lint(defs, LintOptions{Provider: p}) {
			if f.Severity != SeverityInfo {
				t.Errorf("%s: %s", p, f)
			}
		}
	}
}

func TestLintTooMany(t *testing.T) {
	var defs []tool.Definition
	topics := strings.Fields("invoice payment refund shipment customer product review coupon warehouse supplier employee payroll ticket meeting calendar document contract vehicle route weather forecast")
	for i, topic := range topics {
		defs = append(defs, tool.Definition{Name: "get_" + topic, Description: fmt.Sprintf("Use it to look up one %s by its identifier (number %d); not for lists.", topic, i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"the identifier"}},"required":["id"]}`)})
	}
	findings := Lint(defs, LintOptions{})
	n := 0
	for _, f := range findings {
		if f.Rule == RuleTooMany {
			n++
		}
	}
	if len(defs) <= DefaultMaxTools || n != 1 {
		t.Errorf("%d tools: %d too-many findings", len(defs), n)
	}
	if got := Lint(defs[:DefaultMaxTools], LintOptions{}); len(got) > 0 {
		for _, f := range got {
			if f.Rule == RuleTooMany {
				t.Errorf("too-many at %d tools", DefaultMaxTools)
			}
		}
	}
}

func TestCrypticName(t *testing.T) {
	for name, cryptic := range map[string]bool{
		"rf": true, "tool_03": true, "do_it": true, "fn2": true, "helper_util": true, "x1": true,
		"read_file": false, "searchOrders": false, "get_weather_forecast": false, "apply_patch": false,
	} {
		if got := crypticName(name) != ""; got != cryptic {
			t.Errorf("crypticName(%q) = %q", name, crypticName(name))
		}
	}
}
