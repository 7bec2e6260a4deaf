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
# receive-and-validate: the input's last byte is the sequence number wanted
write("fuzz-common", "expect-done", hdr(0x36, 0, seq=9))
write("fuzz-common", "expect-typed", msg(0x22, bytes(15) + b"\x07", seq=7))
write("fuzz-common", "expect-wrong-length", msg(0x22, bytes(7) + b"\x07", seq=7))

# 01: HELLO, and DATA preceded by the expected seq and size limit
# HELLO body: be32 max_payload, u8 lesson (0 none, 1 no-recv, 2 sq-overflow), 3 reserved bytes
write("fuzz-basic", "hello", (msg(0x10, struct.pack(">IB3x", 65536, 0)) + bytes(56))[:56])
write("fuzz-basic", "hello-zero", msg(0x10, struct.pack(">IB3x", 0, 0)))
write("fuzz-basic", "hello-no-recv", msg(0x10, struct.pack(">IB3x", 10, 1)))
write("fuzz-basic", "hello-sq-overflow", msg(0x10, struct.pack(">IB3x", 10, 2)))
write("fuzz-basic", "hello-lesson-3", msg(0x10, struct.pack(">IB3x", 10, 3)))
write("fuzz-basic", "hello-reserved", msg(0x10, struct.pack(">IBBBB", 10, 0, 0, 0, 1)))
write("fuzz-basic", "hello-old-4-bytes", msg(0x10, struct.pack(">I", 65536)))
write("fuzz-basic", "data", struct.pack("<II", 7, 64) + msg(0x11, b"Hello RDMA", seq=7))
write("fuzz-basic", "data-wrong-seq", struct.pack("<II", 7, 64) + msg(0x11, b"Hello", seq=8))
write("fuzz-basic", "control-bytes", b"\x00\x1b[31m\\'\x7f\xff" * 4)


# 02: byte 0 picks the decoder (0 HELLO, 1 BUF, 2 DONE, 3 RESULT, 4 pieces),
# bytes 1..4 the expected seq (little-endian), then the message.
def rw(sel, data, seq=0):
    return bytes([sel]) + struct.pack("<I", seq) + data


def rw_hello(length, ops, rd, reserved=0):
    return (msg(0x20, struct.pack(">IBBH", length, ops, rd, reserved)) + bytes(56))[:56]


def rw_buf(addr, rkey, length, max_msg, ops, rd, seq=0, reserved=0):
    return msg(0x21, struct.pack(">QIIIBBH", addr, rkey, length, max_msg, ops, rd, reserved), seq)


def rw_sum(mtype, checksum, length, seq=1, reserved=0):
    return msg(mtype, struct.pack(">QII", checksum, length, reserved), seq)


write("fuzz-rw", "hello-both", rw(0, rw_hello(1 << 20, 3, 16)))
write("fuzz-rw", "hello-write", rw(0, rw_hello(0, 1, 0)))
write("fuzz-rw", "hello-read-depth-0", rw(0, rw_hello(4096, 2, 0)))
write("fuzz-rw", "hello-write-with-depth", rw(0, rw_hello(4096, 1, 4)))
write("fuzz-rw", "hello-too-big", rw(0, rw_hello((1 << 30) + 1, 1, 0)))
write("fuzz-rw", "hello-ops-4", rw(0, rw_hello(4096, 4, 0)))
write("fuzz-rw", "hello-reserved", rw(0, rw_hello(4096, 1, 0, reserved=1)))
write("fuzz-rw", "hello-short", rw(0, rw_hello(4096, 1, 0)[:20]))
write("fuzz-rw", "buf", rw(1, rw_buf(0x7F1234560000, 0x1234, 1 << 20, 1 << 23, 3, 16)))
write("fuzz-rw", "buf-wraps", rw(1, rw_buf(2**64 - 4096, 0x1234, 8192, 1 << 23, 1, 0)))
write("fuzz-rw", "buf-len-0", rw(1, rw_buf(0x1000, 1, 0, 1 << 23, 1, 0)))
write("fuzz-rw", "buf-max-msg-0", rw(1, rw_buf(0x1000, 1, 4096, 0, 1, 0)))
write("fuzz-rw", "buf-wrong-seq", rw(1, rw_buf(0x1000, 1, 4096, 4096, 1, 0, seq=1)))
write("fuzz-rw", "buf-reserved", rw(1, rw_buf(0x1000, 1, 4096, 4096, 1, 0, reserved=0x100)))
write("fuzz-rw", "buf-truncated", rw(1, rw_buf(0x1000, 1, 4096, 4096, 1, 0)[:30]))
write("fuzz-rw", "done", rw(2, rw_sum(0x22, 0xCBF29CE484222325, 1 << 20), seq=1))
write("fuzz-rw", "done-len-0", rw(2, rw_sum(0x22, 1, 0), seq=1))
write("fuzz-rw", "done-reserved", rw(2, rw_sum(0x22, 1, 4096, reserved=7), seq=1))
write("fuzz-rw", "done-as-result", rw(2, rw_sum(0x23, 1, 4096), seq=1))
write("fuzz-rw", "result", rw(3, rw_sum(0x23, 0x1122334455667788, 4096), seq=1))
write("fuzz-rw", "result-oversized", rw(3, rw_sum(0x23, 1, 4096) + b"\0" * 8, seq=1))
# The atomics: ops 4 fetch-add, 8 cmp-swap; lesson 7 atomic-unaligned, 8
# atomic-no-access (the high byte of rw_hello's `reserved`); BUF's last
# byte, reserved before them, is its flags (1: the word is shared).
write("fuzz-rw", "hello-fetch-add", rw(0, rw_hello(8, 4, 16)))
write("fuzz-rw", "hello-cmp-swap-unaligned", rw(0, rw_hello(16, 8, 4, reserved=0x0700)))
write("fuzz-rw", "hello-fetch-add-depth-0", rw(0, rw_hello(8, 4, 0)))
write("fuzz-rw", "hello-atomic-lesson-write", rw(0, rw_hello(8, 1, 0, reserved=0x0800)))
write("fuzz-rw", "hello-two-atomics", rw(0, rw_hello(8, 12, 4)))
write("fuzz-rw", "buf-shared", rw(1, rw_buf(0x7F1234560000, 0x1234, 8, 1 << 23, 4, 16, reserved=1)))
write("fuzz-rw", "buf-flags-unknown", rw(1, rw_buf(0x1000, 1, 8, 4096, 8, 4, reserved=2)))
write("fuzz-rw", "buf-shared-write", rw(1, rw_buf(0x1000, 1, 4096, 4096, 3, 4, reserved=1)))
write("fuzz-rw", "done-word", rw(2, rw_sum(0x22, 0x6A0D3C09798CD2CB, 8), seq=1))
# 04's server (04_many-clients) takes HELLO and DONE through these same
# decoders; its DONE arrives in a 64-byte receive of the SRQ's pool, and
# its hostile cases (tests/hostile/hostile-04.c) send a HELLO where DONE
# belongs. Lesson 5 (unaligned) decodes; 04 refuses it afterwards.
write("fuzz-rw", "done-pool-padded-64", rw(2, rw_sum(0x22, 1, 4096) + bytes(32), seq=1))
write("fuzz-rw", "done-is-a-hello", rw(2, rw_hello(4096, 3, 4)[:24], seq=1))
write("fuzz-rw", "hello-lesson-unaligned", rw(0, rw_hello(4096, 3, 4, reserved=0x0500)))
write("fuzz-rw", "pieces", rw(4, struct.pack("<II", (1 << 30) + 3, 1 << 23)))
write("fuzz-rw", "pieces-small", rw(4, struct.pack("<II", 10, 3)))

# 03: byte 0 picks the check (0 HELLO, 1 message, 2 immediate, 3 CHUNK,
# 4 CREDIT, 5 name, 6 limits); see tests/fuzz/fuzz-xfer.c for the rest.
MiB = 1 << 20


def x_hello(op, depth, chunk, version=6):
    return (msg(0x30, struct.pack(">BBHI", op, version, depth, chunk)) + bytes(56))[:56]


def x_msg(mtype, body, seq=0, want=None):
    return bytes([1]) + struct.pack("<I", seq if want is None else want) + msg(mtype, body, seq)


def x_request(size, flags, name, name_len=None, proof=bytes(32)):
    n = len(name) if name_len is None else name_len
    return struct.pack(">QIHH", size, flags, n, 0) + (name + bytes(256))[:256] + proof


def x_challenge(version, flags, nonce=bytes(range(32)), pad=0):
    return struct.pack(">HHI", version, flags, pad) + nonce


def x_error(code, text, text_len=None):
    n = len(text) if text_len is None else text_len
    return struct.pack(">IHH", code, n, 0) + (text + bytes(240))[:240]


def x_state(chunk, depth, size, want, flags=0):
    """16 bytes that fuzz-xfer's get_state turns into exactly these values."""
    return struct.pack("<IHQBB", chunk - 4096, depth - 1, size, want, flags)


write("fuzz-xfer", "hello-put", bytes([0]) + x_hello(1, 16, MiB))
write("fuzz-xfer", "hello-get", bytes([0]) + x_hello(2, 255, 4096))
write("fuzz-xfer", "hello-depth-0", bytes([0]) + x_hello(1, 0, MiB))
write("fuzz-xfer", "hello-depth-65535", bytes([0]) + x_hello(1, 65535, MiB))
write("fuzz-xfer", "hello-chunk-1", bytes([0]) + x_hello(2, 16, 1))
write("fuzz-xfer", "hello-chunk-4g", bytes([0]) + x_hello(2, 16, 0xFFFFFFFF))
write("fuzz-xfer", "hello-op-3", bytes([0]) + x_hello(3, 16, MiB))
write("fuzz-xfer", "hello-reserved", bytes([0]) + x_hello(1, 16, MiB, version=1))
write("fuzz-xfer", "hello-version-1", bytes([0]) + x_hello(1, 16, MiB, version=0))
write("fuzz-xfer", "request-put", x_msg(0x31, x_request(16 * MiB, 1, b"data.bin")))
write("fuzz-xfer", "request-get", x_msg(0x31, x_request(0, 0, b"a" * 255)))
write("fuzz-xfer", "request-get-zero-copy", x_msg(0x31, x_request(0, 0x10, b"f")))
write("fuzz-xfer", "request-copy-and-zero-copy", x_msg(0x31, x_request(0, 0x14, b"f")))
write("fuzz-xfer", "request-name-no-nul", x_msg(0x31, x_request(0, 0, b"b" * 256, 256)))
write("fuzz-xfer", "request-name-len-0", x_msg(0x31, x_request(0, 0, b"", 0)))
write("fuzz-xfer", "request-name-len-short", x_msg(0x31, x_request(0, 0, b"abcdef", 3)))
write("fuzz-xfer", "request-name-nul-inside", x_msg(0x31, x_request(0, 0, b"a\0b")))
write("fuzz-xfer", "request-traversal", x_msg(0x31, x_request(5, 0, b"../../etc/passwd")))
write("fuzz-xfer", "request-flags", x_msg(0x31, x_request(5, 4, b"f")))
write("fuzz-xfer", "request-size-negative", x_msg(0x31, x_request(2**63, 0, b"f")))
write("fuzz-xfer", "request-truncated", x_msg(0x31, x_request(5, 0, b"f"))[:100])
write("fuzz-xfer", "request-proof", x_msg(0x31, x_request(0, 2, b"f", proof=bytes(range(1, 33)))))
write("fuzz-xfer", "request-proof-no-flag", x_msg(0x31, x_request(0, 0, b"f", proof=b"\1" * 32)))
write("fuzz-xfer", "request-version-1", x_msg(0x31, x_request(5, 0, b"f")[:272]))
write("fuzz-xfer", "challenge", x_msg(0x38, x_challenge(5, 1)))
write("fuzz-xfer", "challenge-open", x_msg(0x38, x_challenge(5, 0), seq=0))
write("fuzz-xfer", "challenge-version-3", x_msg(0x38, x_challenge(3, 1)))
write("fuzz-xfer", "challenge-flags", x_msg(0x38, x_challenge(5, 0x8001)))
write("fuzz-xfer", "challenge-padding", x_msg(0x38, x_challenge(5, 1, pad=1)))
write("fuzz-xfer", "accept", x_msg(0x32, struct.pack(">QQIIHHH2x16s", 16 * MiB, 0x7F0012340000, 0x77, 16 * MiB, 16, 0, 40000, bytes(range(16)))))
write("fuzz-xfer", "accept-padding", x_msg(0x32, struct.pack(">QQIIHHHB1x16s", 5, 1, 2, 3, 4, 0, 7, 9, bytes(16))))
write("fuzz-xfer", "accept-version-4", x_msg(0x32, struct.pack(">QQIIH6x", 16 * MiB, 0x7F0012340000, 0x77, 16 * MiB, 16)))
# A get's JOIN, in the data connection's private data: byte 0 is 0, as a HELLO's.
write("fuzz-xfer", "join", bytes([0]) + (msg(0x39, bytes(range(16))) + bytes(56))[:56])
write("fuzz-xfer", "join-short", bytes([0]) + msg(0x39, bytes(range(8))))
write("fuzz-xfer", "error", x_msg(0x33, x_error(2, b"no such file 'x' on the server"), seq=1))
write("fuzz-xfer", "error-control-chars", x_msg(0x33, x_error(5, b"\x1b[2Jgotcha")))
write("fuzz-xfer", "error-text-len-241", x_msg(0x33, x_error(5, b"x" * 240, 241)))
write("fuzz-xfer", "chunk-msg", x_msg(0x34, struct.pack(">QQIH2x16sQI4x", 3, 3 * MiB, MiB, 3, bytes(16), 0x7F0000100000, 0x1234), seq=4))
write("fuzz-xfer", "chunk-msg-padding", x_msg(0x34, struct.pack(">QQIHH16sQI4x", 3, 3 * MiB, MiB, 3, 1, bytes(16), 0x7F0000100000, 0x1234)))
write("fuzz-xfer", "chunk-msg-wraps", x_msg(0x34, struct.pack(">QQIH2x16sQI4x", 3, 3 * MiB, MiB, 3, bytes(16), 2**64 - 4096, 0x1234)))
write("fuzz-xfer", "credit-msg", x_msg(0x35, struct.pack(">QH6x16sQI4x", 3, 3, bytes(16), 0x7F0000200000, 0x99), seq=3))
write("fuzz-xfer", "credit-msg-wrong-seq", x_msg(0x35, struct.pack(">QH6x16sQI4x", 3, 3, bytes(16), 0, 0), seq=3, want=2))
write("fuzz-xfer", "done-msg", x_msg(0x36, struct.pack(">Q", 16 * MiB) + bytes(range(16))))
write("fuzz-xfer", "committed-msg", x_msg(0x37, struct.pack(">Q", 5) + bytes(16), seq=2))
write("fuzz-xfer", "unknown-type", x_msg(0x3F, bytes(24)))
write("fuzz-xfer", "bad-magic", bytes([1, 0, 0, 0, 0]) + hdr(0x35, 16, magic=0x52444D59) + bytes(16))
write("fuzz-xfer", "bad-version", bytes([1, 0, 0, 0, 0]) + hdr(0x35, 16, version=2) + bytes(16))
write("fuzz-xfer", "oversized", x_msg(0x35, bytes(16)) + bytes(300))
# A put of 16 MiB + 5 in 1 MiB chunks over 16 slots, expecting chunk 3.
ST = x_state(MiB, 16, 16 * MiB + 5, 3)
write("fuzz-xfer", "imm", bytes([2]) + ST + struct.pack("<II", 3 << 8 | 3, MiB))
write("fuzz-xfer", "imm-wrong-slot", bytes([2]) + ST + struct.pack("<II", 3 << 8 | 19, MiB))
write("fuzz-xfer", "imm-too-long", bytes([2]) + ST + struct.pack("<II", 3 << 8 | 3, MiB + 1))
write("fuzz-xfer", "imm-last", bytes([2]) + x_state(MiB, 16, 16 * MiB + 5, 16)
      + struct.pack("<II", 16 << 8 | 0, 5))
write("fuzz-xfer", "imm-past-end", bytes([2]) + x_state(MiB, 16, 16 * MiB + 5, 17)
      + struct.pack("<II", 17 << 8 | 1, MiB))
write("fuzz-xfer", "chunk", bytes([3]) + ST + struct.pack("<QQIH", 3, 3 * MiB, MiB, 3))
write("fuzz-xfer", "chunk-slot-outside", bytes([3]) + ST + struct.pack("<QQIH", 3, 3 * MiB, MiB, 300))
write("fuzz-xfer", "chunk-len-outside", bytes([3]) + ST + struct.pack("<QQIH", 3, 3 * MiB, 2 * MiB, 3))
write("fuzz-xfer", "chunk-offset-outside", bytes([3]) + ST + struct.pack("<QQIH", 3, 2**62, MiB, 3))
write("fuzz-xfer", "credit", bytes([4]) + ST + struct.pack("<QQH", 5, 3, 3))
write("fuzz-xfer", "credit-not-sent", bytes([4]) + ST + struct.pack("<QQH", 3, 3, 3))
write("fuzz-xfer", "credit-wrong-slot", bytes([4]) + ST + struct.pack("<QQH", 5, 3, 4))
for i, name in enumerate([b"file.bin", b"..", b".", b"a/b", b"../x", b".x.1234.part",
                          b"a\0b", b"\x1b[31mred", b"\xc3\xa9t\xc3\xa9", b"n" * 255, b"n" * 256]):
    write("fuzz-xfer", "name-%02d" % i, bytes([5]) + name)
write("fuzz-xfer", "limits", bytes([6]) + struct.pack("<IHIHQI", MiB, 16, 8 * MiB, 64, 256 * MiB, 8 * MiB))
write("fuzz-xfer", "limits-mem", bytes([6]) + struct.pack("<IHIHQI", 8 * MiB, 255, 8 * MiB, 255, 256 * MiB, 8 * MiB))
