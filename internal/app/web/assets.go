package web

import (
	"embed"
	"html/template"
	"io/fs"
)

//go:embed assets
var assets embed.FS

// static is what /static/ serves: the page's CSS and script.
var static = mustSub(assets, "assets/static")

// pages are the HTML templates: the status page and a job's report.
var pages = template.Must(template.New("").Funcs(template.FuncMap{"ids": idList, "head": newHead}).ParseFS(assets, "assets/*.html"))

// ids is one list of a report: its name and the ids in it.
type ids struct {
	Name string
	IDs  []int64
}

func idList(name string, list []int64) ids { return ids{name, list} }

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // dir is a constant that go:embed has already proven to exist
	}
	return sub
}

// head is what a page's <head> reads: the path back to the root ("" or
// "../") and the title.
type head struct{ Root, Title string }

func newHead(root, title string) head { return head{root, title} }
