package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// textTypes are the media types whose bodies are text, besides text/*.
var textTypes = map[string]bool{
	"application/json": true, "application/xml": true, "application/javascript": true,
	"application/x-javascript": true, "application/ecmascript": true, "application/x-www-form-urlencoded": true,
	"application/yaml": true, "application/x-yaml": true, "application/toml": true, "application/graphql": true,
	"application/x-ndjson": true, "application/csv": true, "application/sql": true, "application/x-sh": true,
	"image/svg+xml": true,
}

// isTextType reports whether a media type (lower case, no parameters) is text.
func isTextType(mt string) bool {
	return strings.HasPrefix(mt, "text/") || textTypes[mt] || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
}

// renderBody returns the body as UTF-8 text, or (binary true) a one-line
// description of it: a model gains nothing from raw bytes.
func renderBody(data []byte, contentType string) (text string, binary bool) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, params = "", nil
	}
	isText := isTextType(mt)
	if !isText && (mt == "" || mt == "application/octet-stream") {
		sniffed, _, _ := mime.ParseMediaType(http.DetectContentType(data))
		isText = isTextType(sniffed) && utf8.Valid(data)
	}
	if isText && !bytes.ContainsRune(data, 0) {
		label := strings.ToLower(params["charset"])
		if label != "" && label != "utf-8" && label != "utf8" && label != "us-ascii" {
			if r, err := charset.NewReaderLabel(label, bytes.NewReader(data)); err == nil {
				if decoded, err := io.ReadAll(r); err == nil {
					return string(decoded), false
				}
			}
		}
		return strings.ToValidUTF8(string(data), "\uFFFD"), false
	}
	if mt == "" {
		mt = "unknown type"
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("[binary body not shown: %s, %d bytes, sha256 %s]", mt, len(data), hex.EncodeToString(sum[:])), true
}
