package selection

import (
	"slices"
	"strings"
	"testing"
)

func analyze(a *analyzer, s string) []string {
	var out []string
	a.terms(s, func(t string, joined bool) {
		if joined {
			t = "+" + t
		}
		out = append(out, t)
	})
	return out
}

func defaultAnalyzer() *analyzer {
	return &analyzer{stem: true, bigrams: true, catenate: true, stop: stopSet(stopWords), memoTerms: map[string]string{}}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		// camelCase, with the whole word after its pieces
		{"getWeatherForecast", []string{"get", "weather", "forecast", "+getweatherforecast"}},
		{"HTTPServer", []string{"http", "server", "+httpserver"}},
		{"listIDs", []string{"list", "id", "+listid"}},
		// snake_case, kebab-case, dotted and path-like names split at the separators
		{"read_multiple_files", []string{"read", "multipl", "file"}},
		{"get-weread-rank", []string{"get", "weread", "rank"}},
		{"fs.read_file", []string{"fs", "read", "file"}},
		// letter–digit boundaries; single digits stay, single letters go
		{"utf8 mp3 x 7 top10", []string{"utf", "8", "mp", "3", "7", "top", "10"}},
		// stop words go, English is stemmed
		{"Searching for the files in a directory", []string{"search", "file", "directori"}},
		{"Please could you help me", []string{"pleas", "help"}},
		// Han, Hiragana, Katakana and Hangul runs become bigrams; a lone character stays
		{"获取微博热搜", []string{"获取", "取微", "微博", "博热", "热搜"}},
		{"搜索 bing_search 结果", []string{"搜索", "bing", "search", "结果"}},
		{"ひらがなカタカナ", []string{"ひら", "らが", "がな", "なカ", "カタ", "タカ", "カナ"}},
		{"코드 검색", []string{"코드", "검색"}},
		{"八", []string{"八"}},
		{"データベース", []string{"デー", "ータ", "タベ", "ベー", "ース"}},
		// other scripts are lower-cased words; accents are kept
		{"Привет Café", []string{"привет", "café"}},
		// junk: punctuation, empty, over-long pieces
		{"", nil},
		{"!!! --- ///", nil},
		{strings.Repeat("a", maxTokenLen+1) + " ok", []string{"ok"}},
	}
	for _, tt := range tests {
		if got := analyze(defaultAnalyzer(), tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTermsWithoutStemming(t *testing.T) {
	a := &analyzer{bigrams: true, stop: stopSet(stopWords), memoTerms: map[string]string{}}
	got := analyze(a, "Searching files")
	if want := []string{"searching", "files"}; !slices.Equal(got, want) {
		t.Errorf("terms = %q, want %q", got, want)
	}
}

// The memo only grows while building; a query after that still stems new words.
func TestTermsMemo(t *testing.T) {
	a := defaultAnalyzer()
	a.memo = true
	analyze(a, "Running")
	if a.memoTerms["Running"] != "run" {
		t.Fatalf("memo = %v", a.memoTerms)
	}
	a.memo = false
	if got := analyze(a, "Jumping"); !slices.Equal(got, []string{"jump"}) {
		t.Errorf("after build: %q", got)
	}
	if _, ok := a.memoTerms["Jumping"]; ok {
		t.Error("a query wrote to the memo")
	}
}

func TestHints(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"save it to /root/markdown/report.md.", []string{"file"}},
		{"open report.xlsx and https://example.com/x", []string{"file", "url"}},
		{"see www.baidu.com", []string{"url"}},
		{"visit example.com, pay 3.5 dollars, e.g. this", nil},
		{"C:\\Users\\me and ~/notes", []string{"file"}},
	}
	for _, tt := range tests {
		if got := hints(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("hints(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzTerms(f *testing.F) {
	for _, s := range []string{"getHTTPServer_v2", "获取微博", "a\xffb", "ﾃﾞｰﾀ", "İSTANBUL"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := defaultAnalyzer()
		a.terms(s, func(term string, _ bool) {
			if term == "" || strings.ContainsAny(term, " \t\n") {
				t.Fatalf("bad term %q from %q", term, s)
			}
		})
		hints(s)
	})
}
