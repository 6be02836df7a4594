package gemini

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// DefaultBaseURL is the Gemini API's base URL.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// maxBody bounds what is read of a response (or of one stream event).
const maxBody = 32 << 20

// Client calls generateContent over HTTP. The zero value is not usable:
// set APIKey (and BaseURL for another server).
type Client struct {
	BaseURL    string       // "": DefaultBaseURL
	APIKey     string       // sent as x-goog-api-key, never in the URL
	HTTPClient *http.Client // nil: http.DefaultClient
}

func (c *Client) endpoint(model, method string) string {
	base := c.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	return strings.TrimRight(base, "/") + "/models/" + url.PathEscape(model) + ":" + method
}

func (c *Client) post(ctx context.Context, u string, req *Request) (*http.Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("gemini: encoding the request: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("x-goog-api-key", c.APIKey)
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var e apiError
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			return nil, fmt.Errorf("gemini: %d %s: %s", resp.StatusCode, e.Error.Status, e.Error.Message)
		}
		return nil, fmt.Errorf("gemini: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return resp, nil
}

// GenerateContent sends req to model and returns the reply.
func (c *Client) GenerateContent(ctx context.Context, model string, req *Request) (*Response, error) {
	resp, err := c.post(ctx, c.endpoint(model, "generateContent"), req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out Response
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&out); err != nil {
		return nil, fmt.Errorf("gemini: decoding the response: %w", err)
	}
	return &out, nil
}

// StreamGenerateContent sends req to model with streaming (server-sent
// events) and calls fn with each chunk as it arrives.
func (c *Client) StreamGenerateContent(ctx context.Context, model string, req *Request, fn func(*Response) error) error {
	resp, err := c.post(ctx, c.endpoint(model, "streamGenerateContent")+"?alt=sse", req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxBody)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var chunk Response
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &chunk); err != nil {
			return fmt.Errorf("gemini: decoding a stream event: %w", err)
		}
		if err := fn(&chunk); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("gemini: reading the stream: %w", err)
	}
	return nil
}
