package selection

import "strings"

// hints returns words a query implies through the form of its tokens rather
// than their text: a file path or file name implies "file", a URL "url". A
// request to save a report to /root/out/report.md needs a tool that writes
// files, though the query never says "file".
func hints(query string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(w string) {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for _, f := range strings.Fields(query) {
		f = strings.Trim(f, "\"'`()[]{}<>,;:!?")
		f = strings.TrimRight(f, ".")
		switch {
		case strings.Contains(f, "://") || strings.HasPrefix(strings.ToLower(f), "www."):
			add("url")
		case isPath(f):
			add("file")
		}
	}
	return out
}

// isPath reports whether f looks like a file path or a file name: a rooted
// or relative path with a separator, or a name with a short extension.
func isPath(f string) bool {
	if strings.HasPrefix(f, "/") || strings.HasPrefix(f, "~/") || strings.HasPrefix(f, "./") ||
		strings.HasPrefix(f, "../") || (len(f) > 2 && f[1] == ':' && (f[2] == '\\' || f[2] == '/')) {
		return len(f) > 1
	}
	dot := strings.LastIndexByte(f, '.')
	if dot < 2 || dot == len(f)-1 || len(f)-dot-1 > 5 { // not e.g, nor a name without a stem
		return false
	}
	ext := f[dot+1:]
	for i := 0; i < len(ext); i++ {
		c := ext[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	// A name with an extension, not a number (3.5) nor a domain (example.com).
	return !(ext[0] >= '0' && ext[0] <= '9') && !isDomainSuffix(ext)
}

func isDomainSuffix(ext string) bool {
	switch ext {
	case "com", "org", "net", "io", "gov", "edu", "cn", "uk", "de", "fr", "jp", "ai", "dev", "app", "co":
		return true
	}
	return false
}
