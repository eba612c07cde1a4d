package main

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/edgeindex/edgeindex/usenet"
)

// appendBinary writes exactly json.Marshal's bytes, for the ingest items
// and for strings that need its escapes or its hand.
func TestAppendBinary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	article := int64(1_000_000)
	bins := []usenet.Binary{{}, {Subject: "a \"q\" \\ <b> & \x7f", Name: "tab\there", Poster: "é <x@y>", Group: "\u2028", Parts: []usenet.Part{}}}
	for i := range 300 {
		bins = append(bins, ingestBinary(i*7919, rng, &article))
	}
	for _, b := range bins {
		want, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendBinary(nil, &b); string(got) != string(want) {
			t.Fatalf("appendBinary wrote\n%s\njson.Marshal\n%s", got, want)
		}
	}
}
