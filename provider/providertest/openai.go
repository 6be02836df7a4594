package providertest

import "fmt"

// OpenAI Chat Completions: https://platform.openai.com/docs/api-reference/chat

func chatCompletion(t Turn, n int) obj {
	msg := obj{"role": "assistant", "content": nil, "refusal": nil}
	if t.Text != "" {
		msg["content"] = t.Text
	}
	finish := "stop"
	if len(t.Calls) > 0 {
		var calls []obj
		for i, c := range t.Calls {
			calls = append(calls, obj{"id": callID(c, "call_", n, i), "type": "function",
				"function": obj{"name": c.Name, "arguments": c.Arguments}})
		}
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	return obj{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": created, "model": "scripted",
		"choices": []obj{{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":   obj{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	}
}

func chatChunks(t Turn, n int) []event {
	id := fmt.Sprintf("chatcmpl-%d", n)
	chunk := func(delta obj, finish any) event {
		return event{data: obj{"id": id, "object": "chat.completion.chunk", "created": created, "model": "scripted",
			"system_fingerprint": "fp_scripted",
			"choices":            []obj{{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}}
	}
	events := []event{chunk(obj{"role": "assistant", "content": ""}, nil)}
	if t.Text != "" {
		for _, p := range pieces(t.Text, 7) {
			events = append(events, chunk(obj{"content": p}, nil))
		}
	}
	for i, c := range t.Calls {
		events = append(events, chunk(obj{"tool_calls": []obj{{"index": i, "id": callID(c, "call_", n, i), "type": "function",
			"function": obj{"name": c.Name, "arguments": ""}}}}, nil))
		if c.Arguments == "" {
			continue
		}
		for _, p := range pieces(c.Arguments, 5) {
			events = append(events, chunk(obj{"tool_calls": []obj{{"index": i, "function": obj{"arguments": p}}}}, nil))
		}
	}
	finish := "stop"
	if len(t.Calls) > 0 {
		finish = "tool_calls"
	}
	events = append(events, chunk(obj{}, finish), event{data: "[DONE]"})
	return events
}

// OpenAI Responses: https://platform.openai.com/docs/api-reference/responses

func responseItems(t Turn, n int) []obj {
	var items []obj
	if t.Text != "" {
		items = append(items, obj{"type": "message", "id": fmt.Sprintf("msg_%d", n), "status": "completed", "role": "assistant",
			"content": []obj{{"type": "output_text", "text": t.Text, "annotations": []any{}}}})
	}
	for i, c := range t.Calls {
		items = append(items, obj{"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", n, i), "call_id": callID(c, "call_", n, i),
			"name": c.Name, "arguments": c.Arguments, "status": "completed"})
	}
	return items
}

func response(t Turn, n int) obj {
	return responseWith(n, "completed", responseItems(t, n))
}

func responseWith(n int, status string, output []obj) obj {
	if output == nil {
		output = []obj{}
	}
	return obj{
		"id": fmt.Sprintf("resp_%d", n), "object": "response", "created_at": created, "status": status,
		"error": nil, "incomplete_details": nil, "instructions": nil, "max_output_tokens": nil, "model": "scripted",
		"output": output, "parallel_tool_calls": true, "previous_response_id": nil, "temperature": 1.0,
		"text": obj{"format": obj{"type": "text"}}, "tool_choice": "auto", "tools": []any{}, "top_p": 1.0,
		"truncation": "disabled", "usage": obj{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
			"input_tokens_details": obj{"cached_tokens": 0}, "output_tokens_details": obj{"reasoning_tokens": 0}},
		"metadata": obj{},
	}
}

func responseEvents(t Turn, n int) []event {
	seq := 0
	ev := func(typ string, fields obj) event {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return event{name: typ, data: fields}
	}
	events := []event{
		ev("response.created", obj{"response": responseWith(n, "in_progress", nil)}),
		ev("response.in_progress", obj{"response": responseWith(n, "in_progress", nil)}),
	}
	items := responseItems(t, n)
	for idx, item := range items {
		switch item["type"] {
		case "message":
			id := item["id"]
			events = append(events,
				ev("response.output_item.added", obj{"output_index": idx, "item": obj{"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []any{}}}),
				ev("response.content_part.added", obj{"item_id": id, "output_index": idx, "content_index": 0, "part": obj{"type": "output_text", "text": "", "annotations": []any{}}}))
			for _, p := range pieces(t.Text, 7) {
				events = append(events, ev("response.output_text.delta", obj{"item_id": id, "output_index": idx, "content_index": 0, "delta": p}))
			}
			events = append(events,
				ev("response.output_text.done", obj{"item_id": id, "output_index": idx, "content_index": 0, "text": t.Text}),
				ev("response.content_part.done", obj{"item_id": id, "output_index": idx, "content_index": 0, "part": obj{"type": "output_text", "text": t.Text, "annotations": []any{}}}),
				ev("response.output_item.done", obj{"output_index": idx, "item": item}))
		case "function_call":
			id := item["id"]
			added := obj{}
			for k, v := range item {
				added[k] = v
			}
			added["arguments"], added["status"] = "", "in_progress"
			events = append(events, ev("response.output_item.added", obj{"output_index": idx, "item": added}))
			args, _ := item["arguments"].(string)
			if args != "" {
				for _, p := range pieces(args, 5) {
					events = append(events, ev("response.function_call_arguments.delta", obj{"item_id": id, "output_index": idx, "delta": p}))
				}
			}
			events = append(events,
				ev("response.function_call_arguments.done", obj{"item_id": id, "output_index": idx, "arguments": args}),
				ev("response.output_item.done", obj{"output_index": idx, "item": item}))
		}
	}
	return append(events, ev("response.completed", obj{"response": responseWith(n, "completed", items)}))
}
