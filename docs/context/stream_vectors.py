#!/usr/bin/env python3
"""Test vectors for lather's message-stream wire format, `lather-stream/1`.

An independent encoder, written from the text of docs/context.md ("The wire format,
`lather-stream/1`": frames, "Shapes", "Tags and values") and not from lather's Rust
code. Running it writes docs/context/stream-vectors.json; the Rust test
crates/lather-context/tests/stream_vectors.rs checks that lather's encoder writes the
same bytes and that lather's decoder reads them back to the same messages.

    python3 docs/context/stream_vectors.py           # (re)write the JSON
    python3 docs/context/stream_vectors.py --check   # exit 1 if the JSON is stale

Standard library only.
"""

import json
import os
import sys

FORMAT = "lather-stream/1"

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUTPUT = os.path.join(HERE, "stream-vectors.json")
WSA_ECHO = os.path.join(ROOT, "bench", "context", "wsa-echo.xml")

# Frame kinds.
SCHEMA, MESSAGE, REPLY, RAW, ERROR = 1, 2, 3, 4, 5

# "blanks (space, tab, CR, LF)"
BLANKS = b" \t\r\n"

MAX_VALUES = 4096


class NoShape(Exception):
    """The document cannot be split: it would not go on a stream."""


# ---------------------------------------------------------------------------
# Integers and strings


def varint(n):
    """Unsigned LEB128: seven bits a byte, least significant group first, the high
    bit set on all bytes but the last; at most 2**32 - 1 (so at most five bytes)."""
    if not 0 <= n <= 0xFFFFFFFF:
        raise ValueError("varint out of range: %r" % (n,))
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def string(b):
    """A varint length and that many bytes."""
    return varint(len(b)) + b


def frame(kind, payload):
    """One byte of kind, a varint payload length, the payload."""
    return bytes([kind]) + varint(len(payload)) + payload


# ---------------------------------------------------------------------------
# Shapes


def _is_blank(text):
    return all(c in BLANKS for c in text)


def split(doc):
    """Splits a document into literals L0..Ln and slots V1..Vn so that
    L0 V1 L1 ... Vn Ln == doc. Returns (literals, slots); raises NoShape."""
    if not isinstance(doc, (bytes, bytearray)):
        raise TypeError("split takes bytes")
    doc = bytes(doc)
    n = len(doc)
    literals = []
    slots = []
    cur = bytearray()  # the literal being built

    def slot(value):
        literals.append(bytes(cur))
        cur.clear()
        slots.append(bytes(value))

    # What the last markup was: "open" for a start tag not ending in "/>", else "other".
    prev = None
    i = 0
    while True:
        # Text: everything up to the next "<" (possibly empty).
        j = doc.find(b"<", i)
        if j < 0:
            j = n
        text = doc[i:j]
        if prev == "open" and doc.startswith(b"</", j):
            # Between a start tag (not .../>) and an end tag: a slot, even empty or blank.
            slot(text)
        elif _is_blank(text):
            cur += text
        else:
            slot(text)
        if j >= n:
            break
        i = j
        # Markup at i.
        if doc.startswith(b"<!--", i):
            e = doc.find(b"-->", i + 4)
            if e < 0:
                raise NoShape("comment does not end")
            cur += doc[i : e + 3]
            i = e + 3
            prev = "other"
        elif doc.startswith(b"<![CDATA[", i):
            start = i + len(b"<![CDATA[")
            e = doc.find(b"]]>", start)
            if e < 0:
                raise NoShape("CDATA does not end")
            cur += b"<![CDATA["
            slot(doc[start:e])
            cur += b"]]>"
            i = e + 3
            prev = "other"
        elif doc.startswith(b"<!", i):
            raise NoShape("<! that is neither a comment nor CDATA (a DOCTYPE)")
        elif doc.startswith(b"<?", i):
            e = doc.find(b"?>", i + 2)
            if e < 0:
                raise NoShape("processing instruction does not end")
            cur += doc[i : e + 2]
            i = e + 2
            prev = "other"
        elif doc.startswith(b"</", i):
            e = doc.find(b">", i + 2)
            if e < 0:
                raise NoShape("end tag does not end")
            cur += doc[i : e + 1]
            i = e + 1
            prev = "other"
        else:
            i, self_closed = _start_tag(doc, i, cur, slot)
            prev = "other" if self_closed else "open"
    literals.append(bytes(cur))
    assert len(literals) == len(slots) + 1
    return literals, slots


def _start_tag(doc, i, cur, slot):
    """Reads the start tag at doc[i] == '<'. Appends its literal parts to cur and
    calls slot() for each attribute value that is not a namespace declaration.
    Returns (index after the tag, whether it ended with '/>')."""
    n = len(doc)
    k = i + 1
    stop = BLANKS + b"/>"
    while k < n and doc[k] not in stop:
        k += 1
    if k == i + 1:
        raise NoShape("start tag without a name")
    lit_from = i  # doc[lit_from:k] is literal not yet added to cur

    def skip_blanks(k):
        while k < n and doc[k] in BLANKS:
            k += 1
        return k

    while True:
        k = skip_blanks(k)
        if k >= n:
            raise NoShape("start tag does not end")
        if doc[k] == ord(">"):
            cur += doc[lit_from : k + 1]
            return k + 1, False
        if doc.startswith(b"/>", k):
            cur += doc[lit_from : k + 2]
            return k + 2, True
        # An attribute: name, optional blanks, '=', optional blanks, a quote, the
        # value up to the same quote.
        s = k
        while k < n and doc[k] not in BLANKS + b"=/>":
            k += 1
        if k == s:
            raise NoShape("bad attribute")
        name = doc[s:k]
        k = skip_blanks(k)
        if k >= n or doc[k] != ord("="):
            raise NoShape("attribute without '='")
        k = skip_blanks(k + 1)
        if k >= n or doc[k] not in b"\"'":
            raise NoShape("attribute value without a quote")
        quote = doc[k : k + 1]
        e = doc.find(quote, k + 1)
        if e < 0:
            raise NoShape("attribute value does not end")
        value = doc[k + 1 : e]
        if name == b"xmlns" or name.startswith(b"xmlns:"):
            cur += doc[lit_from : e + 1]  # a namespace declaration: all literal
        else:
            cur += doc[lit_from : k + 1]  # up to and including the opening quote
            slot(value)
            cur += quote
        lit_from = e + 1
        k = e + 1


# ---------------------------------------------------------------------------
# Tags and values


def _common_prefix(a, b):
    m = min(len(a), len(b))
    p = 0
    while p < m and a[p] == b[p]:
        p += 1
    return p


def _common_suffix(a, b):
    m = min(len(a), len(b))
    s = 0
    while s < m and a[len(a) - 1 - s] == b[len(b) - 1 - s]:
        s += 1
    return s


def encode_value(last, new):
    """(tag, bytes) for one value, given the value in the last message of the
    schema (None for the first message)."""
    whole = string(new)
    if last is None:
        return 1, whole
    if new == last:
        return 0, b""
    p = _common_prefix(last, new)
    s = _common_suffix(last[p:], new[p:])
    middle = new[p : len(new) - s]
    delta = varint(p) + varint(s) + string(middle)
    if len(delta) < len(whole):
        return 2, delta
    return 1, whole


class Encoder:
    """One direction of a stream: schemas numbered from 0 in the order sent, and the
    values of the last message of each schema."""

    def __init__(self):
        self.schemas = {}  # (header names, literals) -> schema id
        self.last = {}  # schema id -> list of values

    def encode(self, kind, request_id, headers, body, status=None):
        """All bytes written for one message: a SCHEMA frame if its shape is new, then
        its MESSAGE (kind "request") or REPLY (kind "reply") frame.

        headers: list of (name, value) as bytes; body: bytes."""
        names = [name for name, _ in headers]
        literals, slots = split(body)
        values = [value for _, value in headers] + slots
        if len(values) > MAX_VALUES:
            raise NoShape("more than %d values" % MAX_VALUES)
        out = bytearray()
        key = (tuple(names), tuple(literals))
        sid = self.schemas.get(key)
        if sid is None:
            sid = len(self.schemas)
            self.schemas[key] = sid
            payload = bytearray(varint(sid))
            payload += varint(len(names))
            for name in names:
                payload += string(name)
            payload += varint(len(literals))
            for literal in literals:
                payload += string(literal)
            out += frame(SCHEMA, bytes(payload))
        last = self.last.get(sid)
        tags = bytearray((len(values) + 3) // 4)
        rest = bytearray()
        for idx, value in enumerate(values):
            tag, data = encode_value(None if last is None else last[idx], value)
            tags[idx // 4] |= tag << (2 * (idx % 4))
            rest += data
        self.last[sid] = values
        if kind == "request":
            payload = varint(request_id) + varint(sid) + bytes(tags) + bytes(rest)
            out += frame(MESSAGE, payload)
        elif kind == "reply":
            payload = (
                varint(request_id)
                + varint(status)
                + varint(sid)
                + bytes(tags)
                + bytes(rest)
            )
            out += frame(REPLY, payload)
        else:
            raise ValueError("kind must be request or reply")
        return bytes(out)


# ---------------------------------------------------------------------------
# Cases

CT12 = "application/soap+xml; charset=utf-8"
CT11 = "text/xml; charset=utf-8"


def req(i, body, headers=None):
    if headers is None:
        headers = [["content-type", CT12], ["soapaction", "urn:x"]]
    return {"kind": "request", "id": i, "headers": headers, "body": body}


def rep(i, status, body, headers=None):
    if headers is None:
        headers = [["content-type", CT12]]
    return {"kind": "reply", "id": i, "status": status, "headers": headers, "body": body}


def _wsa_echo_case():
    with open(WSA_ECHO, "rb") as f:
        doc = f.read().decode("utf-8")
    original = "urn:uuid:6b29fc40-ca47-1067-b31d-00dd010662da"
    if doc.count(original) != 1:
        raise SystemExit("wsa-echo.xml: MessageID %s not found once" % original)
    ids = [
        original,
        "urn:uuid:6b29fc40-ca47-1067-b31d-00dd010662db",
        "urn:uuid:0c1d2e3f-4a5b-4c6d-8e7f-90a1b2c3d4e5",
    ]
    headers = [
        [
            "content-type",
            CT12 + '; action="http://services.example.org/mobile/EchoService/echoRequest"',
        ]
    ]
    return {
        "name": "wsa-echo-three-message-ids",
        "messages": [
            req(n + 1, doc.replace(original, mid), headers) for n, mid in enumerate(ids)
        ],
    }


def _single(value):
    return "<v>" + value + "</v>"


LONG = "x" * 130  # lengths and p/s of 128 or more take two-byte varints
LONG2 = "y" * 300


def cases():
    out = [_wsa_echo_case()]

    out.append(
        {
            "name": "repeated-identically",
            "messages": [
                req(n, '<m:ping xmlns:m="urn:m" seq="1"><m:t>same</m:t></m:ping>')
                for n in (1, 2, 3)
            ],
        }
    )

    # One value (no headers) changed step by step: tag 2 where it is strictly
    # shorter, tag 1 where it is not.
    steps = [
        "abcdef",  # first: tag 1
        "abcdefgh",  # grows at the end: p=6 s=0 middle "gh" -> tag 2 (4 < 9)
        "__abcdefgh",  # grows at the start: p=0 s=8 middle "__" -> tag 2
        "__abcdef",  # shrinks at the end: p=8 s=0 middle "" -> tag 2 (3 < 9)
        "abcdef",  # shrinks at the start: p=0 s=6 middle "" -> tag 2
        "abXYef",  # middle replaced: p=2 s=2 middle "XY" -> tag 2 (5 < 7)
        "abXYeg",  # p=5 s=0 middle "g": 4 bytes vs 7 -> tag 2
        "ac",  # p=1 s=0 middle "c": 4 bytes vs 3 -> tag 1 (tag 2 longer)
        "ad",  # p=1 s=0 middle "d": 4 vs 3 -> tag 1
        "abd",  # p=1 s=1 middle "b": 4 vs 4 -> tag 1 (equal is not shorter)
        "abe",  # p=2 s=0 middle "e": 4 vs 4 -> tag 1
        "abef",  # p=3 s=0 middle "f": 4 vs 5 -> tag 2
        "xaaay",  # unrelated: p=0 s=0 -> tag 1
        "xaaaay",  # p=4 ("xaaa"), then s over what remains ("y"/"ay") = 1, middle "a"
        "xaay",  # p=3 ("xaa"), remains "ay"/"y": s=1, middle ""
        "",  # emptied: p=0 s=0 middle "" -> 3 vs 1 -> tag 1
        "",  # same: tag 0
        LONG,  # 130 bytes: tag 1 with a two-byte length
        LONG + "!",  # p=130 (two-byte varint) s=0 middle "!" -> tag 2
        "!" + LONG + "!",  # p=0 s=131 (two-byte varint) middle "!" -> tag 2
        LONG[:64] + "#" + LONG[64:] + "!",  # p=0 s=67 middle 64 x "x" + "#" -> tag 2
        LONG2,  # 300 bytes: p=0 s=0 -> tag 1
        LONG2[:150] + "#" + LONG2[150:],  # p=150 s=150 (both two bytes) middle "#" -> tag 2
    ]
    out.append(
        {
            "name": "value-grows-and-shrinks",
            "messages": [req(n + 1, _single(v), []) for n, v in enumerate(steps)],
        }
    )

    out.append(
        {
            "name": "empty-leaf-and-self-closed",
            "messages": [
                req(1, '<r><a></a><b/><c x="1"/><d x="2" /></r>'),
                req(2, '<r><a>filled</a><b/><c x=""/><d x="2" /></r>'),
                req(3, '<r><a></a><b/><c x="1"/><d x="3" /></r>'),
            ],
        }
    )

    out.append(
        {
            "name": "blank-text",
            "messages": [
                req(1, "<r>\n  <a> </a>\n\t<b>\t</b>\r\n  <c>\n</c>\n</r>\n"),
                req(2, "<r>\n  <a>  </a>\n\t<b>x</b>\r\n  <c>\n</c>\n</r>\n"),
                # Different blanks between elements: another literal, another schema.
                req(3, "<r>\n<a> </a>\n\t<b>\t</b>\r\n  <c>\n</c>\n</r>\n"),
            ],
        }
    )

    out.append(
        {
            "name": "mixed-content",
            "messages": [
                req(1, "<p>Hello <b>world</b>, and <i>you</i>!<br/> <br/>end</p>"),
                req(2, "<p>Hello <b>there</b>, and <i>you</i>?<br/> <br/>end.</p>"),
            ],
        }
    )

    out.append(
        {
            "name": "comments-pi-declaration",
            "messages": [
                req(
                    1,
                    '<?xml version="1.0" encoding="UTF-8"?>\n'
                    '<!-- a comment with <tags>, & and "quotes" -->\n'
                    '<r><?app do="this"?><a>1</a><!--x--> <b>2<!-- in --></b></r>\n',
                ),
                req(
                    2,
                    '<?xml version="1.0" encoding="UTF-8"?>\n'
                    '<!-- a comment with <tags>, & and "quotes" -->\n'
                    '<r><?app do="this"?><a>10</a><!--x--> <b>2<!-- in --></b></r>\n',
                ),
                # Another comment: another literal, another schema.
                req(
                    3,
                    '<?xml version="1.0" encoding="UTF-8"?>\n'
                    "<!-- changed -->\n"
                    '<r><?app do="this"?><a>10</a><!--x--> <b>2<!-- in --></b></r>\n',
                ),
            ],
        }
    )

    out.append(
        {
            "name": "cdata",
            "messages": [
                req(
                    1,
                    "<r><a><![CDATA[<not markup> & ]]></a>"
                    "<b>x<![CDATA[]]>y</b><c><![CDATA[ ]]></c></r>",
                ),
                req(
                    2,
                    "<r><a><![CDATA[<not markup> &amp; more]]></a>"
                    "<b>x<![CDATA[]]]]>y</b><c><![CDATA[ ]]></c></r>",
                ),
            ],
        }
    )

    out.append(
        {
            "name": "attribute-quoting-and-spacing",
            "messages": [
                req(
                    1,
                    "<r a='single' b = \"spaced\" c=\t'has \"double\" inside'"
                    " d =\"x\" e= '' f=\"it's\"\n g\r\n=\r\n'nl'>t</r>",
                ),
                req(
                    2,
                    "<r a='single!' b = \"spaced\" c=\t'has \"double\"'"
                    " d =\"y\" e= 'now' f=\"it's\"\n g\r\n=\r\n'nl'>t</r>",
                ),
            ],
        }
    )

    out.append(
        {
            "name": "namespace-declarations",
            "messages": [
                req(
                    1,
                    '<p:r xmlns="urn:default" xmlns:p="urn:p" p:attr="v" xmlnsx="not-a-decl"'
                    " id='7'><p:a xmlns:q='urn:q' q:k='w'>t</p:a></p:r>",
                ),
                req(
                    2,
                    '<p:r xmlns="urn:default" xmlns:p="urn:p" p:attr="v2" xmlnsx="still-not"'
                    " id='8'><p:a xmlns:q='urn:q' q:k='w'>t2</p:a></p:r>",
                ),
                # A namespace declaration changed: its value is literal, so a new schema.
                req(
                    3,
                    '<p:r xmlns="urn:default" xmlns:p="urn:p2" p:attr="v2" xmlnsx="still-not"'
                    " id='8'><p:a xmlns:q='urn:q' q:k='w'>t2</p:a></p:r>",
                ),
            ],
        }
    )

    out.append(
        {
            "name": "non-ascii-utf8",
            "messages": [
                req(1, '<r><a>café</a><b lang="中">中文</b><c>ü</c></r>'),
                # é (c3 a9) -> è (c3 a8): the common prefix ends inside the character.
                req(2, '<r><a>cafè</a><b lang="中">中国</b><c>üü</c></r>'),
                req(3, '<r><a>cafè au lait</a><b lang="日">日本語の文</b><c>ü</c></r>'),
            ],
        }
    )

    out.append(
        {
            "name": "entity-references-kept",
            "messages": [
                req(1, '<r a="x &amp; y &quot;z&quot;"><t>1 &lt; 2 &amp;&amp; &#x4E2D;</t></r>'),
                req(2, '<r a="x &amp; y &apos;z&apos;"><t>1 &lt; 2 &amp;&amp; &#20013;</t></r>'),
            ],
        }
    )

    shape_a = '<a:get xmlns:a="urn:a"><a:key>{}</a:key></a:get>'
    shape_b = '<b:put xmlns:b="urn:b"><b:key>{}</b:key><b:val>{}</b:val></b:put>'
    out.append(
        {
            "name": "two-shapes-interleaved",
            "messages": [
                req(1, shape_a.format("k1")),
                req(2, shape_b.format("k1", "v1")),
                req(3, shape_a.format("k2")),
                req(4, shape_b.format("k1", "v1")),
                req(5, shape_a.format("k2")),
                req(6, shape_b.format("k22", "v1")),
                req(7, shape_a.format("k1"), [["content-type", CT12], ["soapaction", "urn:y"]]),
            ],
        }
    )

    fault = (
        '<env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope"><env:Body>'
        "<env:Fault><env:Code><env:Value>env:Receiver</env:Value></env:Code>"
        '<env:Reason><env:Text xml:lang="en">{}</env:Text></env:Reason>'
        "</env:Fault></env:Body></env:Envelope>"
    )
    ok = (
        '<env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope"><env:Body>'
        '<m:echoResponse xmlns:m="urn:lather:echo"><text>{}</text></m:echoResponse>'
        "</env:Body></env:Envelope>"
    )
    out.append(
        {
            "name": "replies-with-status",
            "messages": [
                rep(2, 200, ok.format("second")),
                rep(1, 500, fault.format("upstream timed out")),
                rep(3, 200, ok.format("third")),
                rep(5, 500, fault.format("upstream timed out")),
                rep(4, 503, fault.format("upstream timed out again")),
                rep(300, 200, ok.format("third"), [["content-type", CT11]]),
            ],
        }
    )

    many = (
        '<o:order xmlns:o="urn:o" no="{}" at="{}"><o:line sku="{}" qty="{}"/>'
        '<o:line sku="{}" qty="{}"/><o:note>{}</o:note></o:order>'
    )
    out.append(
        {
            "name": "many-values",
            "messages": [
                # 2 headers + 7 slots = 9 values: three bytes of tags.
                req(1, many.format("1001", "2024-01-01", "A-1", "3", "B-2", "1", "leave at door")),
                req(2, many.format("1002", "2024-01-01", "A-1", "30", "C-9", "1", "leave at door")),
                req(3, many.format("1002", "2024-01-02", "A-1", "30", "C-9", "2", "leave at gate")),
                req(
                    4,
                    many.format("1003", "2024-01-02", "A-1", "30", "C-9", "2", "leave at gate"),
                    [["content-type", CT12], ["soapaction", "urn:x:order"]],
                ),
                req(
                    5,
                    many.format("1003", "2024-01-02", "A-1", "30", "C-9", "2", "leave at gate"),
                    [["content-type", CT12], ["soapaction", "urn:x:order"]],
                ),
            ],
        }
    )

    out.append(
        {
            "name": "no-headers",
            "messages": [
                req(1, "<r><a>1</a></r>", []),
                req(2, "<r><a>2</a></r>", []),
                # The same literals with headers: another schema.
                req(3, "<r><a>2</a></r>"),
                # No headers, no slots: no values, no tag bytes.
                req(4, "<r/>", []),
                req(5, "<r/>", []),
            ],
        }
    )

    out.append(
        {
            "name": "identity-header-and-large-ids",
            "messages": [
                req(
                    127,
                    "<q>1</q>",
                    [["content-type", CT11], ["soapaction", '"urn:q"'], ["x-lather-identity", "alice"]],
                ),
                req(
                    128,
                    "<q>2</q>",
                    [["content-type", CT11], ["soapaction", '"urn:q"'], ["x-lather-identity", "bob"]],
                ),
                req(
                    70000,
                    "<q>2</q>",
                    [["content-type", CT11], ["soapaction", '"urn:q"'], ["x-lather-identity", "alice"]],
                ),
                req(
                    4294967295,
                    "<q>" + LONG + "</q>",
                    [["content-type", CT11], ["soapaction", '"urn:q"'], ["x-lather-identity", "alice"]],
                ),
            ],
        }
    )
    return out


# ---------------------------------------------------------------------------
# Output


def build():
    result = []
    for case in cases():
        enc = Encoder()
        messages = []
        for m in case["messages"]:
            headers = [(n.encode("utf-8"), v.encode("utf-8")) for n, v in m["headers"]]
            body = m["body"].encode("utf-8")
            data = enc.encode(m["kind"], m["id"], headers, body, m.get("status"))
            entry = {"kind": m["kind"], "id": m["id"]}
            if m["kind"] == "reply":
                entry["status"] = m["status"]
            entry["headers"] = [[n, v] for n, v in m["headers"]]
            entry["body"] = m["body"]
            entry["frames"] = data.hex()
            messages.append(entry)
        result.append({"name": case["name"], "messages": messages})
    names = [c["name"] for c in result]
    assert len(set(names)) == len(names), "case names must be unique"
    doc = {"format": FORMAT, "cases": result}
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def main(argv):
    text = build()
    if argv[1:] == ["--check"]:
        try:
            with open(OUTPUT, encoding="utf-8") as f:
                committed = f.read()
        except FileNotFoundError:
            committed = None
        if committed != text:
            sys.stderr.write(
                "%s is stale or missing: run python3 docs/context/stream_vectors.py\n"
                % os.path.relpath(OUTPUT, ROOT)
            )
            return 1
        print("%s is up to date" % os.path.relpath(OUTPUT, ROOT))
        return 0
    if argv[1:]:
        sys.stderr.write("usage: stream_vectors.py [--check]\n")
        return 2
    with open(OUTPUT, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print("wrote %s" % os.path.relpath(OUTPUT, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
