// Package agent runs the loop of a tool-using model: ask the model with the
// tools, run every call of its reply through the governed engine
// (ExecuteAll, so policy, limits and audit hold), return the results in
// the provider's shape, ask again; until the model answers without calling
// a tool, calls a stop-at tool, or has been asked MaxIterations times.
//
// The loop knows no provider: a Model is one conversation with one model
// API, and the adapters (provider/openai, provider/anthropic,
// provider/gemini) implement it over the vendors' clients. The assistant's
// text streams to Options.Text as it arrives.
package agent
