"""Read a Newznab search feed the way SABnzbd does, and print it as JSON.

Usage: /usr/bin/python3 sabnzbd_feedparser.py URL

(Not named feedparser.py: the script would import itself.)

SABnzbd (sabnzbd/rss.py, RSSReader.patch_feedparser) maps the newznab
namespace onto feedparser's mixin and adds a handler for newznab:attr that
keeps each attr in the entry's "newznab" dict, name to value (a repeated
name keeps its last value), with "usenetdate_parsed" next to usenetdate.
This script does the same, with the same handler names, and also keeps
every attr in order in "newznab_attrs", so that repeated ones (category,
group) can be checked too. Then it prints, for every entry, what SABnzbd
reads from it: title, link, id, published, the enclosures, the category
and the attrs.
"""

import calendar
import json
import sys

import feedparser

try:  # feedparser 5 and 6, as SABnzbd supports both
    mixin = feedparser._FeedParserMixin
    parse_date = feedparser._parse_date
except AttributeError:
    mixin = feedparser.mixin._FeedParserMixin
    parse_date = feedparser.datetimes._parse_date

feedparser.SANITIZE_HTML = 0
feedparser.RESOLVE_RELATIVE_URIS = 0
feedparser.USER_AGENT = "SABnzbd/4 (edgeindex test)"
mixin.namespaces["http://www.newznab.com/DTD/2010/feeds/attributes/"] = "newznab"


def _start_newznab_attr(self, attrs):
    try:
        context = self._getContext()
    except AttributeError:
        context = self._get_context()
    if "newznab" not in context:
        context["newznab"] = {}
    context.setdefault("newznab_attrs", [])
    try:
        context["newznab"][attrs["name"]] = attrs["value"]
        if attrs["name"] == "usenetdate":
            context["newznab"][attrs["name"] + "_parsed"] = parse_date(attrs["value"])
        context["newznab_attrs"].append([attrs["name"], attrs["value"]])
    except KeyError:
        pass


mixin._start_newznab_attr = _start_newznab_attr
mixin._start_nZEDb_attr = _start_newznab_attr
mixin._start_nzedb_attr = _start_newznab_attr
mixin._start_nntmux_attr = _start_newznab_attr


def unix(parsed):
    """A feedparser time tuple (UTC) as Unix seconds, or None."""
    return calendar.timegm(parsed) if parsed else None


def main():
    d = feedparser.parse(sys.argv[1])
    out = {
        "bozo": bool(d.get("bozo")),
        "bozo_exception": str(d.get("bozo_exception", "")),
        "status": d.get("status"),
        "version": d.get("version"),
        "title": d.feed.get("title"),
        "entries": [],
    }
    for e in d.entries:
        nzb = dict(e.get("newznab", {}))
        usenetdate = unix(nzb.pop("usenetdate_parsed", None))
        out["entries"].append({
            "title": e.get("title"),
            "link": e.get("link"),
            "id": e.get("id"),
            "published": e.get("published"),
            "published_unix": unix(e.get("published_parsed")),
            "category": e.get("category"),
            "enclosures": [{"href": x.get("href"), "length": x.get("length"), "type": x.get("type")}
                           for x in e.get("enclosures", [])],
            "newznab": nzb,
            "usenetdate_unix": usenetdate,
            "attrs": e.get("newznab_attrs", []),
        })
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
