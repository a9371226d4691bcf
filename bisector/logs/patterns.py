"""Compiled byte patterns for the lines that matter, one family per log generation.

Every pattern starts at a line start (`\\n`, the scanner prepends one to each
chunk), so multi-line stack traces after 5xx lines and `logging error output:`
continuation lines can never match, whatever text they quote. A status must be
followed by whitespace, so a truncated last line cannot be counted.
"""

from __future__ import annotations

import re

CRI_STAMP = rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)"
# Line prefixes: a bare line, or one behind a container-runtime prefix (`<ts> stderr F `).
PLAIN = rb"\n"
CRI = rb"\n(" + CRI_STAMP + rb") \S+ [FP] "
# glog/klog header, capturing the 20-byte time field `MMDD hh:mm:ss.uuuuuu`.
HEADER = rb"[IWEF](\d{4} \d\d:\d\d:\d\d\.\d{6}) +\d+ [^\]\n]*\] "

# The node object and its status subresource; not proxy/log subpaths, not `nodesfoo`.
_OLD_NODE_URI = rb"/api/v1/nodes(?:/[^/?\s:]+(?:/status)?)?(?:\?\S*)?"
_NEW_NODE_URI = rb'/api/v1/nodes(?:/[^/?\s"]+(?:/status)?)?(?:\?[^"\s]*)?'
NODE_URI_TEXT = r"^/api/v1/nodes(?:/[^/?\s]+(?:/status)?)?(?:\?\S*)?$"
# key=value pairs of structured lines, quoted values may hold escaped quotes.
_PAIRS = rb'(?: [\w-]+=(?:"(?:[^"\\\n]|\\.)*"|[^\s"]*))*?'

WRITE_VERBS = rb"PATCH|POST|PUT|APPLY"
# handlers.go / wrap.go: `VERB URI: (LATENCY) STATUS [...]` (groups: time, verb, status).
OLD_NODE_WRITE = (
    HEADER + rb"(" + WRITE_VERBS + rb") " + _OLD_NODE_URI + rb": \([^)\n]*\) (\d+)(?=\s)"
)
# httplog.go v1.18 (`verb=... resp=`) and v1.19+ (`"HTTP" verb=...`).
NEW_NODE_WRITE = (
    HEADER
    + rb'(?:"HTTP" )?verb="('
    + WRITE_VERBS
    + rb')" URI="'
    + _NEW_NODE_URI
    + rb'"'
    + _PAIRS
    + rb" resp=(\d+)(?=\s)"
)
# Any request line (groups: time, verb, URI, status), for "is there request logging at
# all" and for user-defined request metrics.
OLD_ANY_REQUEST = HEADER + rb"([A-Z]+) (/\S*): \([^)\n]*\) (\d+|hijacked)(?=\s)"
NEW_ANY_REQUEST = (
    HEADER + rb'(?:"HTTP" )?verb="([A-Z]+)" URI="([^"\n]*)"' + _PAIRS + rb" resp=(\d+)(?=\s)"
)
JSON_HTTP = rb'(\{"ts":[^\n]*"msg":"HTTP"[^\n]*)'
NEW_FORMAT_MARK = b' verb="'
JSON_HTTP_MARK = b'"msg":"HTTP"'


def for_prefix(body: bytes, prefix: bytes) -> re.Pattern[bytes]:
    return re.compile(prefix + body)


# Rare cacher-side messages, logged from cacher.go or cache_watcher.go: a chunk without
# the text `cache` (nor a forced close's or a dispatch's own mark) is not searched for them.
# Matches are dated from their line.
CACHER_FILES_MARK = b"cache"
# The same search as a regex: sre skips to each `c` with memchr, ~1.6x faster than
# `in` on 16 MiB chunks without the text (bytes.find's skip table suffers from `e`).
CACHER_FILES = re.compile(CACHER_FILES_MARK)
CACHER_HWM_MARK = b"objects queued in incoming channel"
# Each starts with a literal, so the regex engine skips ahead fast; the scanner checks that
# the match starts the message of a real log line (after `] `, or `"msg":"` in JSON).
CACHER_HWM = re.compile(rb"cacher \(([^)\n]+)\): (\d+) objects queued in incoming channel")
FORCED_CLOSE_MARK = b"watcher close due to unresponsiveness"
FORCED_CLOSE = re.compile(
    rb"Forcing (?:(\S+) )?watcher close due to unresponsiveness(?:: ([^\s,\"]+))?"
)
# The incident's patch logged `AAA: dispatching event nr N`; bisector's instrumentation
# patch (bisector/data/instrument/) logs `cacher (*api.Node): dispatched event nr N`,
# counting node events only. `bisector: dispatched node event nr N` is also accepted.
DISPATCH_MARK = b"event nr "  # common to the three forms: one search per chunk
DISPATCH = re.compile(rb"dispatch(?:ing|ed) (?:node )?event nr (\d+)")
DISPATCH_LEADS = (
    b"",
    b"AAA: ",
    b"bisector: ",
    b"cacher (*api.Node): ",
    b"cacher (*core.Node): ",
    b"cacher (nodes): ",
)
