package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

// static holds the page: index.html, app.js (the views, the polling and
// the charts) and style.css.
//
//go:embed static
var static embed.FS

// pageHandler serves the page at /.
func pageHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := static.ReadFile("static/index.html")
		if err != nil { // embedded: never fails
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(b)
	})
}

// staticHandler serves the page's assets under /static/.
func staticHandler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree has the directory
	}
	return http.StripPrefix("/static/", http.FileServerFS(sub))
}
