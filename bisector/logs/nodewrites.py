"""Node writes of glog/klog request lines, decided for all lines of a chunk at once.

The same lines, verbs and statuses as the anchored regex `patterns.OLD_NODE_WRITE`
(`\\n` HEADER `VERB /api/v1/nodes...: (LATENCY) STATUS` then whitespace), found without
running the regex engine on each line: it costs ~300 ns per request line, and a 1 GiB
log of a 5000-node cluster holds ~2 million node writes. Here each field is read for
every candidate line at once (numpy, a short window of bytes at each line's cursor).
A line in a shape the windows do not decide (a field longer than its window, a query
string, a pid field wider than glog's seven columns, a status of other than three
digits, a window past the chunk's end) is matched with the regex itself, so the result
never depends on the windows.

The fields, for lines that are glog records (records.classify: a time that exists):
    header   ` +\\d+ [^\\]\\n]*\\] `  from the space after the time field: the first `]` or
             newline ends it; it must be `]` then a space (the message starts after);
             glog pads the pid to seven columns: `I0602 05:51:10.000001       7 wrap.go:42] `
             (hyperhq/kubernetes 7043372, vendor/github.com/golang/glog/glog.go
             formatHeader: `buf.nDigits(7, 22, pid, ' ')` then `buf.tmp[29] = ' '`); any
             other pid field is left to the regex
    verb     `PATCH ` / `POST ` / `PUT ` / `APPLY ` at the message start
    URI      `/api/v1/nodes`, then `/NAME` (`[^/?\\s:]+`) and `/status` optionally, then
             `: (` (a query `?\\S*` before it: the regex decides)
    latency  `[^)\\n]*` then `) `
    status   `\\d+` followed by whitespace
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from bisector.logs import patterns as p
from bisector.logs.records import ChunkLines, rows_at, word_at

HEAD_SPAN = 48  # from the space after the time field through `] `: pid and file:line
NEAR_SPAN = 32  # the same for most headers: a seven-column pid and a short file:line
URI_SPAN = 64  # `/api/v1/nodes/`, a node name of up to 49 bytes and the byte that ends it
TAIL_SPAN = 48  # `/status: (`, a latency of up to 37 bytes and its `)`
VERBS = (b"PATCH", b"POST", b"PUT", b"APPLY")
_LINE_WRITE = re.compile(b"\n" + p.OLD_NODE_WRITE)  # the regex, for undecided lines


def _literal(text: bytes) -> tuple[np.uint64, np.uint64]:
    """(mask, value) comparing the first len(text) <= 8 bytes of a little-endian word."""
    return np.uint64((1 << (8 * len(text))) - 1), np.uint64(int.from_bytes(text, "little"))


def _is(words: np.ndarray, literal: tuple[np.uint64, np.uint64]) -> np.ndarray:
    mask, value = literal
    hit: np.ndarray = (words & mask) == value
    return hit


_VERB_WORDS = [_literal(verb + b" ") for verb in VERBS]
# By the verb's second byte (index len(VERBS): no verb, a mask and value nothing matches).
_VERB_BY_SECOND = np.full(256, len(VERBS), dtype=np.intp)
_VERB_BY_SECOND[[verb[1] for verb in VERBS]] = np.arange(len(VERBS))
_VERB_MASKS = np.array([mask for mask, _ in _VERB_WORDS] + [0], dtype=np.uint64)
_VERB_VALUES = np.array([value for _, value in _VERB_WORDS] + [1], dtype=np.uint64)
_VERB_ROOM = np.array([len(verb) + 1 for verb in VERBS] + [0])
_API_V1, _NODES = _literal(b"/api/v1/"), _literal(b"nodes")
_STATUS_COLON, _SPACE_PAREN, _COLON_PAREN = _literal(b"/status:"), _literal(b" ("), _literal(b": (")
_QUERY, _STATUS_QUERY = _literal(b"?"), _literal(b"/status?")
# A `) ` then three digits: the status field in its usual shape (whitespace checked apart).
_STATUS_DIGITS = np.uint64(0x00F0F0F0FFFF), np.uint64(0x003030302029)
_LOW_NIBBLES, _SIX, _CARRY = (
    np.uint64(0x0F0F0F0000),
    np.uint64(0x0606060000),
    np.uint64(0x1010100000),
)

# Every message the cacher handlers count starts with one of these (cacher.dated: the
# pattern starts the message, or follows one of patterns.DISPATCH_LEADS).
_CACHER_LEADS = (b"cacher (", b"Forcing ", b"dispatch", b"AAA: ", b"bisector")
_CACHER_WORDS = [_literal(lead) for lead in _CACHER_LEADS]
_CACHER_FIRST = np.zeros(256, dtype=bool)
_CACHER_FIRST[[lead[0] for lead in _CACHER_LEADS]] = True


@dataclass
class Messages:
    """Where the message of each glog record starts (after its header's first `] `)."""

    line: np.ndarray  # index into ChunkLines.starts
    start: np.ndarray  # absolute offset of the message
    first: np.ndarray  # its first byte (0 for an empty message at the chunk's end)
    odd: np.ndarray  # records whose first `]` is past the window, or not followed by a space


@dataclass
class NodeWrites:
    """The node-write lines of a chunk, in line order."""

    line: np.ndarray  # index into ChunkLines.starts
    verb: np.ndarray  # index into VERBS
    conflict: np.ndarray  # PATCH or APPLY answered exactly `409`
    success: np.ndarray  # a three-digit 2xx status


def _u64(value: int) -> np.uint64:
    return np.uint64(value)


def _byte(words: np.ndarray, k: int) -> np.ndarray:
    """Byte k of each little-endian word."""
    picked: np.ndarray = (words >> _u64(8 * k)) & _u64(0xFF)
    return picked


def _first(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a C-contiguous mask: the first column where it holds, and whether one does."""
    at = mask.argmax(axis=1)
    return at, mask.ravel()[np.arange(len(at)) * mask.shape[1] + at]


def _space(values: np.ndarray) -> np.ndarray:
    """`\\s` of a bytes pattern: space, \\t \\n \\v \\f \\r (unsigned: below 9 wraps high)."""
    found: np.ndarray = (values == 32) | ((values - values.dtype.type(9)) <= 4)
    return found


# glog's pid field after the time's space: bytes 0-6 are spaces then digits (at least one),
# byte 7 is a space. Tested on a word: the top three bits of bytes 0-6 are 001 (0x2_ or
# 0x3_), byte 7 is 0x20; bit 4 of each byte marks a digit and those bytes must be one run
# ending at byte 6; a space's low nibble is 0, a digit's is at most 9.
_PID_HIGH = _u64(0xFFE0E0E0E0E0E0E0), _u64(0x2020202020202020)
_PID_DIGIT_BIT, _PID_LOW = _u64(0x0010101010101010), _u64(0x000F0F0F0F0F0F0F)
_PID_SIX, _PID_RUN_END = _u64(0x0006060606060606), _u64(1 << 56)


def _padded_pid(word: np.ndarray) -> np.ndarray:
    ok: np.ndarray = (word & _PID_HIGH[0]) == _PID_HIGH[1]
    digits = ((word & _PID_DIGIT_BIT) >> _u64(4)) * _u64(0xFF)  # 0xFF per digit byte
    ok &= (digits + (digits & (~digits + _u64(1)))) == _PID_RUN_END  # one run up to byte 6
    low = word & _PID_LOW
    ok &= (low & ~digits) == 0
    ok &= ((low + _PID_SIX) & _PID_DIGIT_BIT) == 0
    return ok


def messages(chunk: bytes | bytearray, lines: ChunkLines) -> Messages:
    a = np.frombuffer(chunk, dtype=np.uint8)
    size = len(a)
    line = np.flatnonzero(lines.glog)
    space = lines.starts[line] + 21  # the space after the time field
    # The first `]` or newline (zeros past the chunk's end are neither; col 0 is a space,
    # so 0 means none). A narrow window finds it for glog's usual header (`]` at col 19
    # behind a seven-column pid and `wrap.go:42`); the full window only for the others.
    window = rows_at(a, space, NEAR_SPAN)
    stop = space + ((window == 93) | (window == 10)).argmax(axis=1)
    if len(far := np.flatnonzero(stop == space)):
        window = rows_at(a, space[far], HEAD_SPAN)
        stop[far] += ((window == 93) | (window == 10)).argmax(axis=1)
    after = np.minimum(stop + 1, size - 1)
    bracket = (stop > space) & (a[stop] == 93) & (a[after] == 32) & (stop + 1 < size)
    start = stop[bracket] + 2
    first = a[np.minimum(start, size - 1)]
    first[start >= size] = 0
    return Messages(line[bracket], start, first, line[~bracket])


def cacher_lines(chunk: bytes | bytearray, lines: ChunkLines, msgs: Messages) -> np.ndarray:
    """The glog records (indices into `lines.starts`, in order) whose message starts like
    one the cacher handlers count.

    Never leaves one out (the scanner searches only these lines when every record is a
    glog one): for records outside `msgs` it looks where cacher.dated looks, after the
    first `] ` and the first `"msg":"`.
    """
    found: list[np.ndarray] = []
    near = np.flatnonzero(_CACHER_FIRST[msgs.first])
    if len(near):
        heads = word_at(np.frombuffer(chunk, dtype=np.uint8), msgs.start[near])
        lead = np.zeros(len(near), dtype=bool)
        for word in _CACHER_WORDS:
            lead |= _is(heads, word)
        found.append(msgs.line[near[lead]])
    odd_starts = set(odd_cacher_lines(chunk, lines.starts[msgs.odd].tolist()))
    odd = [i for i in msgs.odd.tolist() if int(lines.starts[i]) in odd_starts]
    if odd:
        found.append(np.array(odd, dtype=np.int64))
    if not found:
        return np.empty(0, dtype=np.int64)
    return np.sort(np.concatenate(found))


def odd_cacher_lines(chunk: bytes | bytearray, starts: list[int]) -> list[int]:
    """Of the records starting at `starts` (headers that do not end in `] ` within the
    window), those whose message starts like a cacher one: after the first `] ` or the
    first `"msg":"` of the line, where cacher.dated looks."""
    size = len(chunk)
    found = []
    for start in starts:
        end = chunk.find(b"\n", start)
        end = size if end < 0 else end
        for mark in (b"] ", b'"msg":"'):
            at = chunk.find(mark, start, end)
            if at >= 0 and bytes(chunk[at + len(mark) : at + len(mark) + 8]).startswith(
                _CACHER_LEADS
            ):
                found.append(start)
                break
    return found


@dataclass(frozen=True)
class RegexWrite:
    """A line the anchored regex matches as a node write, its fields as written."""

    start: int
    stamp: bytes  # the glog time field, b"MMDD hh:mm:ss.uuuuuu"
    verb: bytes
    status: bytes  # one or more digits

    @property
    def conflict(self) -> bool:
        return self.verb in (b"PATCH", b"APPLY") and self.status == b"409"

    @property
    def success(self) -> bool:
        return len(self.status) == 3 and self.status[:1] == b"2"


def regex_writes(chunk: bytes | bytearray, starts: list[int]) -> list[RegexWrite]:
    """The lines starting at `starts` that the anchored regex matches as node writes."""
    found = []
    for start in starts:
        match = _LINE_WRITE.match(chunk, start - 1)
        if match is not None:
            found.append(RegexWrite(start, match.group(1), match.group(2), match.group(3)))
    return found


def node_writes(chunk: bytes | bytearray, lines: ChunkLines, msgs: Messages) -> NodeWrites:
    a = np.frombuffer(chunk, dtype=np.uint8)
    # Candidates: a message that starts with P or A; its second byte names the verb
    # (PATCH, POST, PUT, APPLY), whose whole word and space must then be there.
    cand = np.flatnonzero((msgs.first == 80) | (msgs.first == 65))
    line, cursor = msgs.line[cand], msgs.start[cand]
    head = word_at(a, cursor)
    verb = _VERB_BY_SECOND[_byte(head, 1)]
    is_verb = (head & _VERB_MASKS[verb]) == _VERB_VALUES[verb]
    cursor += _VERB_ROOM[verb]
    padded = _padded_pid(word_at(a, lines.starts[line] + 22))
    ok = is_verb & padded
    undecided = is_verb & ~padded  # another pid field: the regex decides

    # `/api/v1/nodes`, then `/NAME` (or straight on to `:` or a `?` query): one window.
    body = rows_at(a, cursor, URI_SPAN)
    uri = body.view("<u8")
    ok &= _is(uri[:, 0], _API_V1) & _is(uri[:, 1], _NODES)
    after = body[:, 13]
    named = ok & (after == 47)
    ok &= named | (after == 58) | (after == 63)
    name = body[:, 14:]  # the name starts at col 14: its end is the first of `/?:` or \s
    at, found = _first((name == 47) | (name == 63) | (name == 58) | _space(name))
    end = at + 14
    undecided |= named & ~found
    ok &= ~named | (found & (at > 0))
    cursor += np.where(named, end, 13)

    # `/status: (` or `: (` (a query string, `?` or `/status?`, goes to the regex), then
    # `[^)\n]*` and its `)`: one window from the byte after the name.
    tail = rows_at(a, cursor, TAIL_SPAN)
    words = tail.view("<u8")
    with_status = _is(words[:, 0], _STATUS_COLON) & _is(words[:, 1], _SPACE_PAREN)
    undecided |= ok & (_is(words[:, 0], _QUERY) | _is(words[:, 0], _STATUS_QUERY))
    ok &= with_status | _is(words[:, 0], _COLON_PAREN)
    paren = tail == 41
    # The latency starts after `: (` or `/status: (`, which hold no `)` and no newline:
    # rows in either shape need no masking of those columns (other rows are not `ok`).
    stop = paren | (tail == 10)
    close, found = _first(stop)
    undecided |= ok & ~found
    ok &= paren.ravel()[np.arange(len(close)) * TAIL_SPAN + close]
    status = word_at(a, cursor + close)
    digits = _is(status, _STATUS_DIGITS) & ((((status & _LOW_NIBBLES) + _SIX) & _CARRY) == 0)
    digits &= _space(_byte(status, 5))
    # `) ` and a digit, in another shape (one, two, four or more digits): the regex decides.
    undecided |= ok & ~digits & (_byte(status, 1) == 32) & ((_byte(status, 2) - _u64(48)) <= 9)
    ok &= digits & ~undecided

    lead = _byte(status, 2)
    success = ok & (lead == 50)
    conflict = ok & (lead == 52) & (_byte(status, 3) == 48) & (_byte(status, 4) == 57)
    conflict &= (verb == 0) | (verb == 3)
    found_writes = NodeWrites(line[ok], verb[ok], conflict[ok], success[ok])
    return _with_regex(chunk, lines, found_writes, np.concatenate([line[undecided], msgs.odd]))


def _with_regex(
    chunk: bytes | bytearray, lines: ChunkLines, found: NodeWrites, undecided: np.ndarray
) -> NodeWrites:
    """`found` plus the undecided lines the regex matches, in line order."""
    line_of = {int(lines.starts[i]): i for i in undecided.tolist()}
    extra = [
        (line_of[w.start], VERBS.index(w.verb), w.conflict, w.success)
        for w in regex_writes(chunk, list(line_of))
    ]
    if not extra:
        return found
    line = np.concatenate([found.line, np.array([e[0] for e in extra], dtype=np.int64)])
    order = np.argsort(line, kind="stable")
    return NodeWrites(
        line[order],
        np.concatenate([found.verb, np.array([e[1] for e in extra], dtype=np.int8)])[order],
        np.concatenate([found.conflict, np.array([e[2] for e in extra], dtype=bool)])[order],
        np.concatenate([found.success, np.array([e[3] for e in extra], dtype=bool)])[order],
    )
