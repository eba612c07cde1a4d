// Package newznab is edgeindex's front door: the Newznab API that
// downloaders and their helpers (Sonarr, Radarr, Prowlarr, NZBHydra2,
// SABnzbd, NZBGet) search and subscribe to, and a search page for people,
// as one http.Handler over a small Store.
//
//	h, err := newznab.New(newznab.Config{Store: store})
//	http.ListenAndServe("127.0.0.1:5076", h)
//
// The handler serves:
//
//	GET  /api?t=caps|search|tvsearch|movie|get|details&apikey=KEY&...
//	GET  /                  the search page (HTML, no JavaScript needed)
//	GET  /details/{id}      one release
//	POST /login, /logout    set or clear the page's key cookie
//
// Every answer of /api is XML: RSS 2.0 in the newznab namespace for
// searches, <caps> for caps, an NZB for get, and <error code
// description/> for every refusal, never HTML.
//
// Users hold API keys: random, 128 bits, stored only as their SHA-256
// (HashKey). Each key may have a daily request and grab limit; a key's use
// is counted in the store, so several servers sharing a database share
// the counts.
package newznab
