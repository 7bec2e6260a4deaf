#!/usr/bin/env python3
"""Write the seed corpus of the fuzz targets (tests/fuzz/corpus/): a few
valid messages of each kind and a few near-misses. Run from the top folder;
the files are committed, so this only needs to run when formats change."""
import os
import struct

MAGIC, VERSION = 0x52444D58, 1


def hdr(mtype, length, seq=0, version=VERSION, flags=0, magic=MAGIC):
    return struct.pack(">IBBHII", magic, version, mtype, flags, length, seq)


def msg(mtype, body, seq=0):
    return hdr(mtype, len(body), seq) + body


def write(target, name, data):
    d = os.path.join("tests", "fuzz", "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# common: header, private data, remote buffer + a range to check
write("fuzz-common", "reject", msg(0x01, b"server busy"))
write("fuzz-common", "reject-padded", (msg(0x01, b"busy") + bytes(56))[:56])
write("fuzz-common", "bad-magic", hdr(0x01, 0, magic=0))
write("fuzz-common", "bad-version", hdr(0x01, 0, version=2))
write("fuzz-common", "long-length", hdr(0x01, 0xFFFFFFFF))
write("fuzz-common", "remote-range",
      struct.pack(">QII", 0x7F0000001000, 0x1234, 4096) + struct.pack("<QQ", 4000, 96))
write("fuzz-common", "remote-wrap",
      struct.pack(">QII", 1, 2, 4096) + struct.pack("<QQ", 16, 2**64 - 8))

# 01: HELLO, and DATA preceded by the expected seq and size limit
write("fuzz-basic", "hello", (msg(0x10, struct.pack(">I", 65536)) + bytes(56))[:56])
write("fuzz-basic", "hello-zero", msg(0x10, struct.pack(">I", 0)))
write("fuzz-basic", "data", struct.pack("<II", 7, 64) + msg(0x11, b"Hello RDMA", seq=7))
write("fuzz-basic", "data-wrong-seq", struct.pack("<II", 7, 64) + msg(0x11, b"Hello", seq=8))
write("fuzz-basic", "control-bytes", b"\x00\x1b[31m\\'\x7f\xff" * 4)
