package selection

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/selection/eval"
	"github.com/toolgate/toolgate/tool"
)

func def(name, desc, schema string) tool.Definition {
	return tool.Definition{Name: name, Description: desc, InputSchema: json.RawMessage(schema)}
}

var catalogue = []tool.Definition{
	def("read_file", "Read the complete contents of a file from disk.", `{"properties":{"path":{"description":"file path"}}}`),
	def("write_file", "Create a new file or overwrite an existing one.", `{"properties":{"path":{},"content":{"description":"text to write"}}}`),
	def("list_directory", "List the entries of a directory.", `{"properties":{"path":{}}}`),
	def("get_weather", "Current weather conditions and forecast for a city.", `{"properties":{"city":{"description":"city name"}}}`),
	def("searchIssues", "Search GitHub issues by keyword.", `{"properties":{"repo":{"description":"owner/name of the repository"}}}`),
	def("send_email", "Send an email message.", `{"properties":{"to":{},"subject":{},"body":{}}}`),
	def("bing_search", "使用必应搜索指定的关键词，并返回搜索结果列表", `{"properties":{"query":{"description":"搜索关键词"}}}`),
	def("translate_text", "Translate text between languages.", `{"properties":{"text":{},"target_language":{"description":"ISO code"}}}`),
}

func names(ms []Match) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestSelect(t *testing.T) {
	x := New(catalogue, Options{})
	tests := []struct {
		query string
		want  string // the best match
	}{
		{"what's the weather forecast in Paris?", "get_weather"},
		{"Reading a file", "read_file"},                        // stemming: reading → read
		{"search issues", "searchIssues"},                      // camelCase name
		{"searchissues", "searchIssues"},                       // the whole word of a camelCase name
		{"find GitHub issues", "searchIssues"},                 // find expands to search
		{"fetch the files of a folder", "list_directory"},      // folder ↔ directory
		{"save the summary to ./out/summary.md", "write_file"}, // a path implies a file
		{"mail the team", "send_email"},
		{"搜索关键词", "bing_search"},                  // CJK bigrams
		{"target language ISO", "translate_text"}, // parameter names and descriptions
	}
	for _, tt := range tests {
		got := x.Select(tt.query, 3)
		if len(got) == 0 || got[0].Name != tt.want {
			t.Errorf("Select(%q) = %v, want %s first", tt.query, got, tt.want)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Score > got[i-1].Score {
				t.Errorf("Select(%q) not in score order: %v", tt.query, got)
			}
		}
	}
}

func TestSelectLimits(t *testing.T) {
	x := New(catalogue, Options{})
	if got := x.Select("file", 0); got != nil {
		t.Errorf("k=0: %v", got)
	}
	if got := x.Select("the of and", 5); got != nil {
		t.Errorf("stop words only: %v", got)
	}
	if got := x.Select("zzyzx", 5); got != nil {
		t.Errorf("unknown word: %v", got)
	}
	if got := x.Select("file", 100); len(got) < 2 || len(got) >= len(catalogue) {
		t.Errorf("file, k=100: %v; want only the definitions holding the term", names(got))
	}
	if got := New(nil, Options{}).Select("file", 5); got != nil {
		t.Errorf("empty index: %v", got)
	}
	if x.Len() != len(catalogue) {
		t.Errorf("Len = %d", x.Len())
	}
}

// Equal scores come out by name, then by position, whatever the input order.
func TestSelectTies(t *testing.T) {
	defs := []tool.Definition{
		def("zeta", "convert units", ""), def("alpha", "convert units", ""),
		def("mid", "convert units", ""), def("alpha", "convert units", ""),
	}
	got := New(defs, Options{}).Select("convert", 10)
	want := []Match{{"alpha", 1, got[0].Score}, {"alpha", 3, got[0].Score}, {"mid", 2, got[0].Score}, {"zeta", 0, got[0].Score}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if top := New(defs, Options{}).Select("convert", 2); !slices.Equal(top, want[:2]) {
		t.Errorf("k=2: %v", top)
	}
}

// A name weighs more than a description.
func TestSelectFieldWeights(t *testing.T) {
	defs := []tool.Definition{
		def("process_data", "Resize the picture to the given size.", ""),
		def("resize_image", "Process data.", ""),
	}
	if got := New(defs, Options{}).Select("resize", 2); got[0].Name != "resize_image" {
		t.Errorf("default weights: %v", got)
	}
	desc := Options{Weights: Weights{Name: 0.1, Description: 5, ParamNames: 1, ParamDescriptions: 1}}
	if got := New(defs, desc).Select("resize", 2); got[0].Name != "process_data" {
		t.Errorf("description weighted: %v", got)
	}
}

func TestSelectHostileDefinitions(t *testing.T) {
	defs := []tool.Definition{
		{Name: "", Description: ""},
		{Name: "x\xff\xfe", Description: "\x00\x01", InputSchema: json.RawMessage(`{"properties":`)},
		{Name: "ok_tool", Description: "does ok things", InputSchema: json.RawMessage(`[[[[`)},
	}
	x := New(defs, Options{})
	if got := x.Select("ok things", 5); len(got) != 1 || got[0].Name != "ok_tool" {
		t.Errorf("got %v", got)
	}
	x.Select("\xff\x00 "+string(make([]byte, 1<<16)), 5)
}

func TestSelectConcurrent(t *testing.T) {
	x := New(catalogue, Options{})
	want := names(x.Select("write a file to the folder", 5))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				q := fmt.Sprintf("Writing files number %d to the folder", i*1000+j) // new words: no memo writes
				x.Select(q, 5)
				if got := names(x.Select("write a file to the folder", 5)); !slices.Equal(got, want) {
					t.Errorf("got %v, want %v", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// The regression guard: on LiveMCPBench the default method stays at or
// above the plain BM25 floor of the data README (R@5 39.3, R@10 46.4,
// nDCG@10 37.5, completeness@10 24.5) and above plain BM25 as measured here.
func TestLiveMCPBenchQuality(t *testing.T) {
	b, err := eval.LoadLiveMCPBench(liveMCPBenchDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Tools) != 527 || len(b.Tasks) != 94 {
		t.Fatalf("%d tools, %d tasks with gold; want 527 and 94", len(b.Tools), len(b.Tasks))
	}
	score := func(opts Options) eval.Metrics {
		x := New(b.Definitions(), opts)
		return b.Score(func(q string) []string { return names(x.Select(q, 50)) })
	}
	plain, def := score(Options{Plain: true}), score(Options{})
	t.Logf("plain BM25: %v", plain)
	t.Logf("default:    %v", def)
	floor := eval.Metrics{Recall5: 39.3, Recall10: 46.4, NDCG10: 37.5, Complete10: 24.5}
	for _, c := range []struct {
		name              string
		got, floor, plain float64
	}{
		{"R@5", def.Recall5, floor.Recall5, plain.Recall5},
		{"R@10", def.Recall10, floor.Recall10, plain.Recall10},
		{"nDCG@10", def.NDCG10, floor.NDCG10, plain.NDCG10},
		{"complete@10", def.Complete10, floor.Complete10, plain.Complete10},
	} {
		if c.got < c.floor || c.got <= c.plain {
			t.Errorf("%s = %.1f; want ≥ %.1f (README floor) and > %.1f (plain BM25 here)", c.name, c.got, c.floor, c.plain)
		}
	}
}

func TestSelectNoExpansion(t *testing.T) {
	x := New(catalogue, Options{NoExpansion: true})
	if got := x.Select("folder", 3); got != nil {
		t.Errorf("folder without expansion: %v", got)
	}
	if got := New(catalogue, Options{}).Select("folder", 3); len(got) == 0 || got[0].Name != "list_directory" {
		t.Errorf("folder with expansion: %v", got)
	}
}
