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
//	     /api/...           an XML error 202, status 404
//	GET  /                  the search page (HTML, no JavaScript needed)
//	GET  /details/{id}      one release
//	GET  /nzb/{id}          the page's NZB link: what t=get answers
//	POST /login, /logout    set or clear the page's key cookie
//
// The API reads its key only from the apikey parameter; the page routes
// also from the cookie. /nzb/{id}, /login and /logout refuse a request
// another site sent (Sec-Fetch-Site cross-site or same-site, an Origin or
// Referer of another host, or Origin: null), since the cookie rides
// along. The page's referrer policy is same-origin, so its own form
// carries a real Origin even over plain HTTP, where browsers send no
// Sec-Fetch-Site. A /nzb/{id} keyed by the cookie also needs the token
// t of the page's own link, which only a holder of the key can make.
//
// Every answer of /api is XML: RSS 2.0 in the newznab namespace for
// searches, <caps> for caps, an NZB for get, and <error code
// description/> for every refusal, never HTML.
//
// The API's rules, as clients are served:
//
//   - A query is checked whole before its key is counted, on the API and
//     the page alike: a malformed request answers its error and changes
//     nothing. Parameters a
//     function does not read are ignored; an empty one counts as absent;
//     one given twice must have the same value both times, else it is
//     201, incorrect parameter.
//   - Every Newznab error is sent with HTTP status 200, as most indexers
//     do: clients read the code in the body, and Sonarr and NZBHydra2 act
//     on it (100-199 as credentials, "Request limit reached" as a rate
//     limit). Only 900, a failure of the server itself, is sent as 500;
//     its cause goes to Config.Logger, never to the client.
//   - limit past Config.MaxLimit is clamped to it (NZBHydra2 asks 1000);
//     limit=0, offset past release.MaxSearchOffset, maxage past MaxAge
//     days, sizes past int64, and negative or non-numeric numbers are 201.
//     maxage=0 means no bound.
//   - A search that carries an id the index cannot honour (tvdbid, rid,
//     tvmazeid, imdbid, tmdbid, traktid...), or a q with no word in it,
//     answers a feed with no items, never the unfiltered list.
//   - Searches list the releases of Config.MinCompletion; get and details
//     serve any release by its id. get counts a grab once the NZB is
//     ready to send, before its bytes go out (a client that leaves
//     mid-body is still charged): an unknown id, or a release with
//     nothing to download, is 300 and counts none. HEAD of get answers
//     the headers and counts no grab.
//   - Every text of an item or a page row is at most MaxField bytes, cut
//     with "…"; an item carries at most MaxGroups groups, a details page
//     lists at most MaxFiles files.
//   - Each request's work in the store has the deadline Config.Timeout:
//     past it, or past a deadline of the store's own (an error that is
//     context.DeadlineExceeded), 900 and a warning in the log. A request
//     counts once checked and keyed, whatever the store then does. A
//     client that leaves is logged at debug level and counts nothing
//     more.
//   - o=json is not implemented (no *arr client reads it): 203, function
//     not available.
//
// Users hold API keys: random, 128 bits, stored only as their SHA-256
// (HashKey). Each key may have a daily request and grab limit; a key's use
// is counted in the store, so several servers sharing a database share
// the counts.
package newznab
