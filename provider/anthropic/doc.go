// Package anthropic adapts toolgate's tools to Anthropic's Messages API,
// over the official SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
// Definitions go out as tools with an input_schema compiled by
// schema.CompileFor(schema.Anthropic); the model's tool_use blocks come back
// as tool.Calls (the tool's own name, the input as the model sent it:
// streamed input_json_delta pieces are kept byte for byte, so input that
// does not parse reaches the engine as it is and is answered with an
// invalid_arguments error, never run as {}); results go back as
// tool_result blocks in one user message, is_error set for a failed call
// and its text the tool.Error's model-facing text. A user message added
// after the results joins that message as a text block after them.
//
// Messages is a conversation that implements agent.Model; Format requests
// a structured reply through output_config.format (json_schema) and
// validates it.
package anthropic
