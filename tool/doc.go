// Package tool is the vocabulary every other toolgate package speaks: a tool's
// Definition (name, description, JSON Schemas, MCP annotations, permission
// level), the Tool interface, the Call a model makes, the Result that goes back,
// and the Error that tells a model what happened, why, and what to do next.
//
// A typed tool is a Go function; New infers its input and output schemas from
// the function's types:
//
//	type WeatherIn struct {
//		City  string `json:"city" jsonschema:"the city, e.g. Paris"`
//		Units string `json:"units,omitempty" enum:"metric,imperial" default:"metric"`
//	}
//	weather := tool.New("get_weather", "Current weather for a city.",
//		func(ctx context.Context, in WeatherIn) (Forecast, error) { ... })
//
// Besides the `json` and `jsonschema` (description) tags, fields may carry
// `default`, `enum` (comma separated), `minimum`, `maximum`, `minLength`,
// `maxLength`, `pattern`, `minItems`, `maxItems` and `format` tags. A typed
// tool whose input is a flat struct of strings, numbers and booleans decodes
// the usual arguments without encoding/json (decode.go); anything that
// decoder does not read exactly as encoding/json would goes to encoding/json.
//
// Lazy builds a tool on first use, registered meanwhile by its head (the
// definition but for the schemas): a program that builds every tool set to
// run one call infers only that tool's schemas.
//
// A tool's context carries what its caller gives it (WithProgress,
// WithLogger, WithApproval, WithEncoded; WithEncodedLogger and CallContext
// carry a logger and an encoding in one value); WithTimeout derives a
// deadline from it that, on the engine's run context, costs no timer of
// its own, and WithTimeoutValue the same with a value in one object.
//
// Package tool imports nothing else of toolgate's.
package tool
