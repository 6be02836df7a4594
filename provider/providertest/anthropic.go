package providertest

import (
	"encoding/json"
	"fmt"
)

// Anthropic Messages: https://docs.anthropic.com/en/api/messages and
// https://docs.anthropic.com/en/docs/build-with-claude/streaming

func anthropicContent(t Turn, n int) []obj {
	var content []obj
	if t.Text != "" {
		content = append(content, obj{"type": "text", "text": t.Text})
	}
	for i, c := range t.Calls {
		content = append(content, obj{"type": "tool_use", "id": callID(c, "toolu_", n, i), "name": c.Name, "input": asObject(c.Arguments)})
	}
	if content == nil {
		content = []obj{}
	}
	return content
}

func stopReason(t Turn) string {
	if len(t.Calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func anthropicMessage(t Turn, n int) obj {
	return obj{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": "scripted",
		"content": anthropicContent(t, n), "stop_reason": stopReason(t), "stop_sequence": nil,
		"usage": obj{"input_tokens": 10, "output_tokens": 5},
	}
}

func anthropicEvents(t Turn, n int) []event {
	ev := func(typ string, fields obj) event { fields["type"] = typ; return event{name: typ, data: fields} }
	start := anthropicMessage(Turn{}, n)
	start["content"], start["stop_reason"] = []obj{}, nil
	events := []event{ev("message_start", obj{"message": start}), ev("ping", obj{})}
	idx := 0
	if t.Text != "" {
		events = append(events, ev("content_block_start", obj{"index": idx, "content_block": obj{"type": "text", "text": ""}}))
		for _, p := range pieces(t.Text, 7) {
			events = append(events, ev("content_block_delta", obj{"index": idx, "delta": obj{"type": "text_delta", "text": p}}))
		}
		events = append(events, ev("content_block_stop", obj{"index": idx}))
		idx++
	}
	for i, c := range t.Calls {
		events = append(events, ev("content_block_start", obj{"index": idx, "content_block": obj{"type": "tool_use",
			"id": callID(c, "toolu_", n, i), "name": c.Name, "input": json.RawMessage("{}")}}))
		if c.Arguments != "" {
			for _, p := range pieces(c.Arguments, 5) {
				events = append(events, ev("content_block_delta", obj{"index": idx, "delta": obj{"type": "input_json_delta", "partial_json": p}}))
			}
		}
		events = append(events, ev("content_block_stop", obj{"index": idx}))
		idx++
	}
	return append(events,
		ev("message_delta", obj{"delta": obj{"stop_reason": stopReason(t), "stop_sequence": nil}, "usage": obj{"output_tokens": 5}}),
		ev("message_stop", obj{}))
}
