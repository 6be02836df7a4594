package providertest

// Gemini generateContent: https://ai.google.dev/api/generate-content and
// https://ai.google.dev/gemini-api/docs/function-calling

func geminiParts(t Turn, n int) []obj {
	var parts []obj
	if t.Text != "" {
		parts = append(parts, obj{"text": t.Text})
	}
	for _, c := range t.Calls {
		fc := obj{"name": c.Name, "args": asObject(c.Arguments)}
		if c.ID != "" {
			fc["id"] = c.ID
		}
		parts = append(parts, obj{"functionCall": fc})
	}
	return parts
}

func geminiResponse(t Turn, n int) obj {
	return geminiWith(geminiParts(t, n))
}

func geminiWith(parts []obj) obj {
	if parts == nil {
		parts = []obj{}
	}
	return obj{
		"candidates":    []obj{{"content": obj{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": obj{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "scripted",
	}
}

// geminiChunks streams the text in pieces, then the function calls whole
// (Gemini never splits a functionCall part across chunks).
func geminiChunks(t Turn, n int) []event {
	var events []event
	if t.Text != "" {
		for _, p := range pieces(t.Text, 7) {
			events = append(events, event{data: geminiWith([]obj{{"text": p}})})
		}
	}
	calls := geminiParts(Turn{Calls: t.Calls}, n)
	if len(calls) > 0 || len(events) == 0 {
		events = append(events, event{data: geminiWith(calls)})
	}
	return events
}
