#!/usr/bin/env python3
"""Independent encoder/decoder for lather's stream frames, written from
docs/eventing-binary.md and docs/eventing.md#bindings (not from the Rust code), printing
test vectors as `name hex` lines.

    python3 crates/lather-eventing/tests/vectors/binary_frames.py \
        > crates/lather-eventing/tests/vectors/binary_frames.txt

Covers lather.bin notification frames (plain and FLAG_GZIP), the SubscriptionEnd frame
(FLAG_KIND, kind 1) and soap.tcp frames (plain and with the length's top bit = gzip).
gzip output is made with mtime=0 so the vectors are reproducible.
"""
import gzip
import struct

MAGIC = b"LB"
VERSION = 1
FLAG_GZIP = 0x01
FLAG_KIND = 0x02
KIND_NOTIFICATION = 0
KIND_SUBSCRIPTION_END = 1
MAX_BODY = 16 * 1024 * 1024
SOAP_GZIP = 0x80000000


def text(s, width):
    b = s.encode("utf-8")
    return struct.pack(">B" if width == 1 else ">H", len(b)) + b


def notification_body(sub, seq, published, action, topic, fields, payload):
    out = struct.pack(">QQ", seq, published) + text(sub, 1) + text(action, 2) + text(topic, 2)
    out += struct.pack(">B", len(fields))
    for kind, name, value in fields:
        out += struct.pack(">B", kind) + text(name, 2) + text(value, 2)
    return out + payload


def frame(body, flags=0):
    if flags & FLAG_GZIP:
        body = gzip.compress(body, mtime=0)
    return MAGIC + bytes([VERSION, flags]) + struct.pack(">I", len(body)) + body


def end_body(sub, status, reason):
    return bytes([KIND_SUBSCRIPTION_END]) + text(sub, 1) + text(status, 2) + text(reason, 2)


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, n):
        if self.at + n > len(self.data):
            raise ValueError("truncated")
        part = self.data[self.at:self.at + n]
        self.at += n
        return part

    def u(self, fmt):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def text(self, width):
        return self.take(self.u(">B" if width == 1 else ">H")).decode("utf-8")


def decode(data):
    """One frame: ('notification', dict) or ('end', dict), and the bytes it took."""
    if data[:2] != MAGIC or data[2] != VERSION:
        raise ValueError("not a frame")
    flags = data[3]
    if flags & ~(FLAG_GZIP | FLAG_KIND):
        raise ValueError("unknown flags")
    (length,) = struct.unpack(">I", data[4:8])
    if length > MAX_BODY:
        raise ValueError("too long")
    body = data[8:8 + length]
    if flags & FLAG_GZIP:
        with gzip.GzipFile(fileobj=__import__("io").BytesIO(body)) as f:
            body = f.read(MAX_BODY + 1)
        if len(body) > MAX_BODY:
            raise ValueError("inflates too far")
    r = Reader(body)
    kind = r.u(">B") if flags & FLAG_KIND else KIND_NOTIFICATION
    if kind == KIND_SUBSCRIPTION_END:
        return ("end", {"sub": r.text(1), "status": r.text(2), "reason": r.text(2)}), 8 + length
    if kind != KIND_NOTIFICATION:
        raise ValueError("unknown kind")
    seq, published = r.u(">Q"), r.u(">Q")
    sub, action, topic = r.text(1), r.text(2), r.text(2)
    fields = []
    for _ in range(r.u(">B")):
        fields.append((r.u(">B"), r.text(2), r.text(2)))
    note = dict(sub=sub, seq=seq, published=published, action=action, topic=topic,
                fields=fields, payload=r.data[r.at:])
    return ("notification", note), 8 + length


def soap_frame(envelope, compressed):
    data = gzip.compress(envelope, mtime=0) if compressed else envelope
    prefix = len(data) | (SOAP_GZIP if compressed else 0)
    return struct.pack(">I", prefix) + data


def soap_decode(data):
    (prefix,) = struct.unpack(">I", data[:4])
    length = prefix & ~SOAP_GZIP
    body = data[4:4 + length]
    return (gzip.decompress(body) if prefix & SOAP_GZIP else body), 4 + length


vectors = {}
# The example of docs/eventing-binary.md.
vectors["notification_doc_example"] = frame(
    notification_body("s", 2, 3, "a", "", [(1, "n", "v")], b"<e/>"))
FIELDS = [(0, "{urn:k}Key", "42"), (2, "", '<k:R xmlns:k="urn:k"><k:x>1</k:x></k:R>'),
          (1, "{urn:auth}Auth", "t\u00f6k")]
PAYLOAD = b'<q:Quote xmlns:q="urn:q" n="7">' + b"ab" * 600 + b"</q:Quote>"
BODY = notification_body("urn:uuid:00000000-0000-4000-8000-000000000001", 7,
                         1700000000000000000, "urn:q:Quote", "{urn:q}Quote", FIELDS, PAYLOAD)
vectors["notification_fields"] = frame(BODY)
vectors["notification_gzip"] = frame(BODY, FLAG_GZIP)
vectors["subscription_end"] = frame(end_body(
    "urn:uuid:00000000-0000-4000-8000-000000000001",
    "http://www.w3.org/2011/03/ws-evt/SourceShuttingDown", "going away \u00fc"), FLAG_KIND)
ENVELOPE = (b'<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body>'
            + PAYLOAD + b"</s:Body></s:Envelope>")
vectors["soap_tcp_plain"] = soap_frame(ENVELOPE, False)
vectors["soap_tcp_gzip"] = soap_frame(ENVELOPE, True)

# Self-check: every frame decodes back.
assert decode(vectors["notification_fields"])[0] == decode(vectors["notification_gzip"])[0]
assert decode(vectors["notification_gzip"])[0][1]["payload"] == PAYLOAD
assert decode(vectors["subscription_end"])[0][1]["reason"] == "going away \u00fc"
assert soap_decode(vectors["soap_tcp_gzip"])[0] == ENVELOPE == soap_decode(vectors["soap_tcp_plain"])[0]

for name, data in vectors.items():
    print(name, data.hex())
