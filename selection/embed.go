package selection

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/tool"
)

// Embedder turns texts into vectors with an OpenAI-compatible embeddings
// endpoint (POST {BaseURL}/embeddings, as OpenAI, Ollama, vLLM, llama.cpp
// and LiteLLM serve it), caching each vector on disk by a hash of the model
// and the text, so that a catalogue is embedded once. It is a plain
// net/http client: the wire format is two small JSON objects.
type Embedder struct {
	BaseURL  string       // e.g. "https://api.openai.com/v1" or "http://127.0.0.1:11434/v1"
	Model    string       // e.g. "text-embedding-3-small"
	APIKey   string       // sent as a bearer token when set
	CacheDir string       // folder for cached vectors; "": no cache
	Client   *http.Client // nil: http.DefaultClient
	Batch    int          // texts per request; 0: 64
}

// maxEmbedText bounds the text sent for one definition or query.
const maxEmbedText = 8 << 10

// maxEmbedResponse bounds a response body.
const maxEmbedResponse = 64 << 20

type embedRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Embed returns one vector per text, in order, each normalised to unit
// length. Cached vectors are read from CacheDir; the rest are requested in
// batches and written there.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	texts = slices.Clone(texts)
	out := make([][]float32, len(texts))
	var missing []int
	for i, t := range texts {
		if len(t) > maxEmbedText {
			texts[i] = t[:maxEmbedText]
		}
		if v, ok := e.cached(texts[i]); ok {
			out[i] = v
			continue
		}
		missing = append(missing, i)
	}
	batch := e.Batch
	if batch <= 0 {
		batch = 64
	}
	for start := 0; start < len(missing); start += batch {
		idx := missing[start:min(start+batch, len(missing))]
		in := make([]string, len(idx))
		for j, i := range idx {
			in[j] = texts[i]
		}
		vecs, err := e.request(ctx, in)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			out[i] = vecs[j]
			e.store(texts[i], vecs[j])
		}
	}
	return out, nil
}

func (e *Embedder) request(ctx context.Context, input []string) ([][]float32, error) {
	body, err := json.Marshal(embedRequest{Model: e.Model, Input: input})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(e.BaseURL, "/")+"/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	client := e.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbedResponse))
	if err != nil {
		return nil, fmt.Errorf("embeddings: reading the response: %w", err)
	}
	var r embedResponse
	jerr := json.Unmarshal(data, &r)
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(data[:min(len(data), 300)]))
		if jerr == nil && r.Error != nil {
			msg = r.Error.Message
		}
		return nil, fmt.Errorf("embeddings: %s: %s", resp.Status, msg)
	}
	if jerr != nil {
		return nil, fmt.Errorf("embeddings: the response is not JSON: %w", jerr)
	}
	out := make([][]float32, len(input))
	dim := -1
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= len(input) || out[d.Index] != nil {
			return nil, fmt.Errorf("embeddings: the response has a bad or repeated index %d", d.Index)
		}
		if dim >= 0 && len(d.Embedding) != dim || len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embeddings: vectors of different or zero length")
		}
		dim = len(d.Embedding)
		out[d.Index] = unit(d.Embedding)
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("embeddings: the response has no vector for input %d", i)
		}
	}
	return out, nil
}

// cacheFile names the cache entry of a text.
func (e *Embedder) cacheFile(text string) string {
	sum := sha256.Sum256([]byte(e.BaseURL + "\x00" + e.Model + "\x00" + text))
	return filepath.Join(e.CacheDir, hex.EncodeToString(sum[:])+".f32")
}

func (e *Embedder) cached(text string) ([]float32, bool) {
	if e.CacheDir == "" {
		return nil, false
	}
	b, err := os.ReadFile(e.cacheFile(text))
	if err != nil || len(b) == 0 || len(b)%4 != 0 {
		return nil, false
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, true
}

// store writes a vector atomically (a temporary file renamed into place);
// a cache that cannot be written only costs a request next time.
func (e *Embedder) store(text string, v []float32) {
	if e.CacheDir == "" {
		return
	}
	if err := os.MkdirAll(e.CacheDir, 0o700); err != nil {
		return
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	f, err := os.CreateTemp(e.CacheDir, ".tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), e.cacheFile(text)) != nil {
		os.Remove(f.Name())
	}
}

func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	s := float32(1 / math.Sqrt(n))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * s
	}
	return out
}

// DefinitionText is the text of a definition that is embedded: name,
// title, description and the input schema's parameter names and
// descriptions.
func DefinitionText(def tool.Definition) string {
	var b strings.Builder
	b.WriteString(def.Name)
	if def.Title != "" {
		b.WriteString(" (" + def.Title + ")")
	}
	b.WriteString(": ")
	b.WriteString(def.Description)
	params(def.InputSchema, func(name, title, desc string) {
		b.WriteString("\n" + name)
		if t := strings.TrimSpace(title + " " + desc); t != "" {
			b.WriteString(": " + t)
		}
	})
	s := b.String()
	if len(s) > maxEmbedText {
		s = s[:maxEmbedText]
	}
	return s
}

// Hybrid ranks definitions by fusing the lexical index with embedding
// similarity (reciprocal rank fusion). It is immutable and safe for
// concurrent use; each Select embeds its query (one request, or a cache
// hit).
type Hybrid struct {
	lex   *Index
	vecs  [][]float32
	names []string
	emb   *Embedder
	// Depth is how many of each ranking are fused; K the RRF constant.
	depth int
	k     float64
}

// NewHybrid builds the lexical index over defs and embeds them with emb.
func NewHybrid(ctx context.Context, defs []tool.Definition, opts Options, emb *Embedder) (*Hybrid, error) {
	texts := make([]string, len(defs))
	names := make([]string, len(defs))
	for i, d := range defs {
		texts[i], names[i] = DefinitionText(d), d.Name
	}
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	return &Hybrid{lex: New(defs, opts), vecs: vecs, names: names, emb: emb, depth: 100, k: 60}, nil
}

// Select returns up to k definitions, best first, ranked by reciprocal rank
// fusion (Cormack et al., 2009: score = Σ 1/(60 + rank)) of the lexical
// ranking and the cosine similarity of the query's embedding, each cut at
// its first 100. A query that cannot be embedded is an error; the caller
// may fall back to the lexical index alone.
func (h *Hybrid) Select(ctx context.Context, query string, k int) ([]Match, error) {
	if k <= 0 || len(h.names) == 0 {
		return nil, nil
	}
	qv, err := h.emb.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	scores := map[int]float64{}
	for r, m := range h.lex.Select(query, h.depth) {
		scores[m.Index] += 1 / (h.k + float64(r+1))
	}
	type sim struct {
		i int
		s float64
	}
	sims := make([]sim, len(h.vecs))
	for i, v := range h.vecs {
		sims[i] = sim{i, dot(qv[0], v)}
	}
	slices.SortFunc(sims, func(a, b sim) int {
		if a.s != b.s {
			if a.s > b.s {
				return -1
			}
			return 1
		}
		return a.i - b.i
	})
	for r, s := range sims[:min(h.depth, len(sims))] {
		scores[s.i] += 1 / (h.k + float64(r+1))
	}
	out := make([]Match, 0, len(scores))
	for i, s := range scores {
		out = append(out, Match{Name: h.names[i], Index: i, Score: s})
	}
	slices.SortFunc(out, better)
	return out[:min(k, len(out))], nil
}

func dot(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
