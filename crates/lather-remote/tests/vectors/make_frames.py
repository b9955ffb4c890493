#!/usr/bin/env python3
"""Writes remote frames (docs/remote-frame.md, version 3) with an encoder independent of the
Rust one, as test vectors and fuzz seeds.

Run from the repository root:
    python3 crates/lather-remote/tests/vectors/make_frames.py
It writes fuzz/corpus/remote_frame/*.bin; tests/frame_vectors.rs decodes them and checks
the fields named below.
"""
import os
import struct

OUT = "fuzz/corpus/remote_frame"


def str16(s):
    b = s.encode("utf-8")
    return struct.pack(">H", len(b)) + b


def opt(s):
    return b"\x00" if s is None else b"\x01" + str16(s)


def blob32(b):
    return struct.pack(">I", len(b)) + b


def qname(ns, local):
    return str16(ns) + str16(local)


def start(kind):
    return b"LTHR" + bytes([3, kind])


def request_parts():
    block = (b'<w:Security xmlns:w="urn:wsse"><w:Token>t</w:Token></w:Security>')
    out = start(1)
    out += (0x0123456789ABCDEF0011223344556677).to_bytes(16, "big")
    out += struct.pack(">IQI", 2, 1_700_000_000_123, 250)
    out += bytes([2, 0])  # SOAP 1.2, request flow
    out += str16("auth") + str16("quotes") + opt("urn:getQuote") + opt("127.0.0.1") + opt(None)
    out += struct.pack(">H", 1) + str16("q") + str16("urn:quotes")
    out += b"\x00"  # parts
    out += struct.pack(">H", 1) + blob32(block)
    out += b"\x01" + blob32(b"<q:Get>IBM</q:Get>")
    return out


def request_whole():
    env = (b'<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/">'
           b"<s:Body><m:Ping xmlns:m=\"urn:m\"/></s:Body></s:Envelope>")
    out = start(1) + (7).to_bytes(16, "big") + struct.pack(">IQI", 0, 0, 0) + bytes([1, 1])
    out += str16("digest") + str16("echo") + opt(None) + opt(None) + opt("00-abc-def-01")
    out += struct.pack(">H", 0) + b"\x01" + blob32(env)
    return out


def timing(handler_us, worker_us):
    return struct.pack(">II", handler_us, worker_us)


def answer_continue():
    out = start(2) + (0x0123456789ABCDEF0011223344556677).to_bytes(16, "big")
    out += timing(1234, 1500) + b"\x00"
    out += struct.pack(">H", 4)
    out += b"\x01" + qname("urn:t", "A") + blob32(b'<t:A xmlns:t="urn:t">1</t:A>')
    out += b"\x02" + qname("urn:t", "B") + blob32(b'<t:B xmlns:t="urn:t"/>')
    out += b"\x03" + qname("urn:t", "C")
    out += b"\x04" + blob32(b"<x/>")
    return out


def answer_respond():
    env = b'<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body/></e:Envelope>'
    return start(2) + (9).to_bytes(16, "big") + timing(0, 7) + b"\x01" + blob32(env)


def answer_fault():
    out = start(2) + (3).to_bytes(16, "big") + timing(0xFFFFFFFF, 0xFFFFFFFF) + b"\x02"
    out += struct.pack(">H", 4004) + str16("handler auth failed: boom")
    out += struct.pack(">H", 0) + b"\x01" + qname("http://www.w3.org/2005/08/addressing", "To")
    out += opt("urn:uuid:1")
    return out


def progress(kind, id):
    return start(kind) + id.to_bytes(16, "big")


FRAMES = {
    "request_parts.bin": request_parts(),
    "request_whole.bin": request_whole(),
    "answer_continue.bin": answer_continue(),
    "answer_respond.bin": answer_respond(),
    "answer_fault.bin": answer_fault(),
    "ack.bin": progress(3, 0x0123456789ABCDEF0011223344556677),
    "heartbeat.bin": progress(4, 5),
    # Refused: a namespace count far beyond the bytes left, and a truncated answer.
    "bad_count.bin": request_parts()[:82] + b"\xff\xff",  # 82: where the count sits
    "truncated_answer.bin": answer_continue()[:40],
}

os.makedirs(OUT, exist_ok=True)
for name, data in FRAMES.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
