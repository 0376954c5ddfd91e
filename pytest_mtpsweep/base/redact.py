"""Secrets in URLs: the one place that hides them before anything is printed or written.

A URL may carry user-info (`http://user:password@host`, a proxy's way); requests use it as it
is, but every message, record, log and report shows it through `redact`: `http://user:***@host`,
and a user-info without a password (often a token) as `http://***@host`. A token also travels
as a query value (`?private_token=…`) or in the fragment: those show as `?private_token=***`
and `#***`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "***"
# scheme://user[:password]@ anywhere in a text; the password may hold '/', '?', '#' and even
# ':', and runs to the last '@' before a space or a quote, so a mis-split URL hides too much
# rather than too little (only a port and path before an '@' are ever hidden with it).
_URL = re.compile(r"(?P<lead>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^\s'\"/?#@:]*)(?P<pw>:[^\s]*)?@")
# user:password@host with no scheme (a URL typed without http://), at the start of a word.
_BARE = re.compile(r"(?<![^\s'\"(\[=,])(?P<user>[^\s'\"/?#@:]+):(?P<pw>[^\s'\"@/]*)@")
# A URL's query and fragment, to the next space or quote: each query value and the fragment
# are hidden whole (their names stay, so the message still says which parameter it was).
_TAIL = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"?#]*)(?P<tail>[?#][^\s'\"]*)")


def _url(m: re.Match[str]) -> str:
    who = f"{m['user']}:{MASK}" if m["pw"] is not None and m["user"] else MASK
    return f"{m['lead']}{who}@"


def _tail(m: re.Match[str]) -> str:
    query, hash_, fragment = m["tail"].partition("#")
    if query.startswith("?"):
        parts = (p.partition("=") for p in query[1:].split("&"))
        query = "?" + "&".join(f"{k}={MASK}" if eq else (MASK if k else "") for k, eq, _ in parts)
    return m["head"] + query + (f"#{MASK}" if hash_ and fragment else hash_)


def redact_url(text: str) -> str:
    """`text` (a URL, a message, an argv word) with every URL's password, a user-info that is
    only a user, each query value and the fragment replaced by ***."""
    if "@" in text:  # user-info first: a password may hold '?' and '#'
        text = _BARE.sub(lambda m: f"{m['user']}:{MASK}@", _URL.sub(_url, text))
    if "://" in text and ("?" in text or "#" in text):
        text = _TAIL.sub(_tail, text)
    return text


def redact_urls(words: Iterable[str]) -> list[str]:
    """`redact_url` over each of `words` (a command line, a list of URLs)."""
    return [redact_url(w) for w in words]
