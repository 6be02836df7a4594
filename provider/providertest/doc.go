// Package providertest serves scripted model replies over HTTP in the
// vendors' documented wire formats, for tests: no model is reachable from a
// test, so the official SDK clients (and toolgate run) are pointed at a
// Server on loopback instead.
//
// One Server answers every API it knows by path:
//
//	POST …/chat/completions                    OpenAI Chat Completions (JSON, or SSE chunks with tool_call deltas when "stream": true)
//	POST …/responses                           OpenAI Responses (a response object, or its SSE events)
//	POST …/v1/messages                         Anthropic Messages (a message, or SSE events with input_json_delta)
//	POST …/models/{model}:generateContent      Gemini (a GenerateContentResponse)
//	POST …/models/{model}:streamGenerateContent Gemini, streamed (?alt=sse)
//
// Each request takes the next Turn of the script, renders it in the format
// of the path it came to, and is recorded (Requests) so that a test can
// assert on what the client sent: the tools parameter, the results, the
// echoed call IDs. A Turn's Raw text is served as it is, for fixtures
// recorded from the vendors' API references.
package providertest
