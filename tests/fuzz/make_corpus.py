#!/usr/bin/env python3
"""make_corpus.py - write the seed corpus for fuzz_rx: one file per valid
message shape (see protocols/wire.h), in fuzz_rx's record format. Re-run it
when the wire header changes; the files are committed."""
import os, struct

HDR = struct.Struct("<I BBH I II II II II I QQ QQQQQ II Q Q")
assert HDR.size == 128

def hdr(op, flags=0, niov=0, inline=0, pt=0, ac=1, init_md=0, tgt_md=0, mbits=0,
        roff=0, loff=0, rlen=0, mlen=0, hdr_data=0, toff=0, ospid=0, tgt_link=0):
    return HDR.pack(0, op, flags, niov, inline, 0, os.getpid() & 0xffffffff, 0, 0, pt, ac,
                    init_md, tgt_md, 0, mbits, roff, loff, rlen, mlen, hdr_data, toff,
                    ospid, 0, 0, tgt_link)

def rec(kind, payload):
    return bytes([kind]) + struct.pack("<H", len(payload)) + payload

PUT, GET, GETPUT, ACK, REPLY, FIN, NACK, RFIN, DATA = range(1, 10)
seeds = {
    "put_eager": rec(0, hdr(PUT, inline=16, rlen=16, pt=0) + b"x" * 16) + rec(3, b""),
    "put_ack": rec(0, hdr(PUT, flags=1, inline=8, rlen=8, pt=1) + b"y" * 8) + rec(3, b""),
    "put_trunc": rec(0, hdr(PUT, inline=64, rlen=9000, roff=4090, pt=0) + b"z" * 64),
    "put_copy": rec(0, hdr(PUT, flags=8, inline=32, rlen=96, pt=2) + b"a" * 32)
                + rec(0, hdr(DATA, inline=32) + b"b" * 32) + rec(0, hdr(DATA, inline=32) + b"c" * 32),
    "put_rndv": rec(0, hdr(PUT, flags=2, niov=1, rlen=64, pt=0) + struct.pack("<QQ", 0x1000, 64)),
    "get": rec(0, hdr(GET, rlen=100, roff=10, pt=3, mbits=5)) + rec(3, b""),
    "getput": rec(0, hdr(GETPUT, inline=8, rlen=8, pt=0) + b"swapswap") + rec(3, b""),
    "ack": rec(5, hdr(ACK, mlen=8, rlen=8)),
    "reply": rec(5, hdr(REPLY, inline=4, mlen=4, loff=2) + b"abcd"),
    "reply_rndv": rec(13, hdr(REPLY, flags=2, niov=1, mlen=64) + struct.pack("<QQ", 0x2000, 64)),
    "fin": rec(5, hdr(FIN, flags=4, rlen=10, mlen=10)),
    "nack": rec(5, hdr(NACK)),
    "rfin": rec(9, hdr(RFIN)),
    # reduction puts (PT_WF_ATOMIC, tgt_link = type << 8 | op; portals3_ext.h):
    # eager, rendezvous (pulled and combined) and copy mode (fragments combined)
    "put_atomic_sum_i64": rec(0, hdr(PUT, flags=0x40, tgt_link=(1 << 8) | 0, inline=16, rlen=16,
                                     pt=0) + struct.pack("<qq", 5, -7)) + rec(3, b""),
    "put_atomic_ack_bxor_u64": rec(0, hdr(PUT, flags=0x41, tgt_link=(2 << 8) | 5, inline=8, rlen=8,
                                          pt=1) + struct.pack("<Q", 0xff00)) + rec(3, b""),
    "put_atomic_max_double": rec(0, hdr(PUT, flags=0x40, tgt_link=(4 << 8) | 2, inline=16, rlen=16,
                                        roff=4, pt=0) + struct.pack("<dd", 1.5, -2.0)),
    "put_atomic_rndv": rec(0, hdr(PUT, flags=0x42, niov=1, tgt_link=(1 << 8) | 0, rlen=64, pt=0)
                       + struct.pack("<QQ", 0x1000, 64)) + rec(3, b""),
    "put_atomic_copy": rec(0, hdr(PUT, flags=0x48, tgt_link=(3 << 8) | 1, inline=32, rlen=96, pt=2)
                       + b"a" * 32) + rec(0, hdr(DATA, inline=32) + b"b" * 32)
                       + rec(0, hdr(DATA, inline=32) + b"c" * 32),
    "cmd_put": rec(6, struct.pack("<HHIQQ", 0, 0, 0, 0, 0) + bytes(96)) + rec(3, b""),
    "cmd_get": rec(6, struct.pack("<HHIQQ", 1, 0, 1, 0, 0) + bytes(96)) + rec(3, b""),
}
d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(d, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {d}")
