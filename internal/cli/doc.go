// Package cli is the toolgate command line: every command of the CLI
// contract in DESIGN.md, shared by the two programs that offer it.
//
// cmd/toolgate is the lean one: it serves, proxies and calls tools without
// linking a model vendor's SDK (the OpenAI and Anthropic SDKs add about
// 90 MB to a binary and tens of milliseconds of start-up to every process,
// sandbox helpers included). cmd/toolgate-agent is the same CLI with those
// SDKs linked; `toolgate run --provider openai|anthropic` hands itself over
// to it. Main runs either, given what the binary links (Options).
package cli
