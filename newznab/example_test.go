package newznab_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/sqlstore"
)

// Example mounts the API on a SQLite store with one user, and asks it
// for caps, a search and a search with a wrong key.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "newznab-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(dir, "edgeindex.db"), sqlstore.Config{})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	key, err := newznab.NewKey()
	if err != nil {
		panic(err)
	}
	if err := store.AddUser(ctx, newznab.User{Name: "alice", KeyHash: newznab.HashKey(key), RequestLimit: 1000}); err != nil {
		panic(err)
	}
	h, err := newznab.New(newznab.Config{Store: store, Title: "My indexer"})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	get := func(query string) []byte {
		res, err := http.Get(srv.URL + "/api?" + query)
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Header.Get("Content-Type"))
		return body
	}

	var caps struct {
		Server struct {
			Title string `xml:"title,attr"`
		} `xml:"server"`
		Limits struct {
			Max string `xml:"max,attr"`
		} `xml:"limits"`
	}
	xml.Unmarshal(get("t=caps"), &caps)
	fmt.Println(caps.Server.Title, "answers at most", caps.Limits.Max)

	var feed struct {
		Response struct {
			Total string `xml:"total,attr"`
		} `xml:"channel>response"`
		Limits struct {
			Current string `xml:"apicurrent,attr"`
			Max     string `xml:"apimax,attr"`
		} `xml:"channel>apilimits"`
	}
	xml.Unmarshal(get("t=search&q=show&apikey="+key), &feed)
	fmt.Println("total", feed.Response.Total, "requests", feed.Limits.Current, "of", feed.Limits.Max)

	fmt.Printf("%s", get("t=search&apikey=wrong"))
	// Output:
	// text/xml; charset=utf-8
	// My indexer answers at most 100
	// application/rss+xml; charset=utf-8
	// total 0 requests 1 of 1000
	// text/xml; charset=utf-8
	// <?xml version="1.0" encoding="UTF-8"?>
	// <error code="100" description="Incorrect user credentials"/>
}
