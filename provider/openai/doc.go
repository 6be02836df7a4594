// Package openai adapts toolgate's tools to OpenAI's function calling, over
// the official SDK (github.com/openai/openai-go/v3), for both of its APIs:
// Chat Completions (tools of type function, arguments as a JSON string,
// results as "tool" role messages) and Responses (function tools,
// function_call and function_call_output items).
//
// Definitions go out compiled by schema.CompileFor (strict mode when
// Options.Strict is set); the calls a model sends come back as tool.Calls
// with the tool's own name and arguments mapped back to its schema
// (Compiled.ToolArguments). Arguments that are not exactly one JSON object
// (empty, two objects back to back, an array, cut off) reach the engine
// byte for byte, so the model is told precisely what was wrong
// (invalid_arguments) rather than the call running with {}. Results go back
// as text; a failed call as its tool.Error's model-facing text.
//
// Chat and Responses are conversations that implement agent.Model; an
// OpenAI-compatible base URL (option.WithBaseURL) serves Ollama, vLLM and
// llama.cpp's server through the same code. ChatStructured and
// ResponsesStructured request a strict JSON-schema reply and validate it.
package openai
