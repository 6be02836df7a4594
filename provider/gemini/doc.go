// Package gemini adapts toolgate's tools to Gemini's function calling
// (generateContent and streamGenerateContent of the Gemini API).
//
// Google's Go SDK (google.golang.org/genai) is not among toolgate's chosen
// dependencies, so the wire types and the small HTTP client here are
// written by hand from Google's documented REST format: tools of
// functionDeclarations whose parameters are the OpenAPI subset that
// schema.CompileFor(schema.Gemini) produces; toolConfig.functionCallingConfig
// (mode AUTO, NONE, ANY, allowedFunctionNames); functionCall parts with an
// args object (and an id on newer models); results as functionResponse parts
// with a response object holding "output", or "error" for a failed call, as
// the API reference recommends. Parts are replayed as they came, so
// thoughtSignature (which newer models require back) is kept.
//
// Gemini has no switch for parallel calls; Options.DisableParallel is
// refused rather than silently ignored.
package gemini
