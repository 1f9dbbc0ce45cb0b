#!/usr/bin/env python3
"""garbage.py IFACE DST_MAC COUNT SEED [DST_EP] - send COUNT seeded random
frames with EtherType 0x88b5 (rmpp) to DST_MAC on IFACE through AF_PACKET:
random bytes, truncated headers, a valid-looking version byte with garbage
after it, all-zero/all-one frames.  With DST_EP, every frame but the
purely random ones carries it in the rmpp dst_ep field (bytes 4-5, big
endian), which the ether link's socket filter (rmpp/link_ether.c) requires
before a frame reaches the parser and its counters.  Exit 0 when all were sent."""
import random
import socket
import sys


def main():
    ifname, dst, count, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    src = s.getsockname()[4]
    dmac = bytes(int(x, 16) for x in dst.split(":"))
    ep = int(sys.argv[5]) if len(sys.argv) > 5 else None
    for i in range(count):
        kind = i % 4
        if kind == 0:      # random length, random bytes
            body = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 1400)))
        elif kind == 1:    # a short header
            body = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 40)))
        elif kind == 2:    # plausible first bytes (version 1, small types), garbage after
            body = bytes([1, rng.randint(0, 15)]) + bytes(rng.getrandbits(8) for _ in range(rng.randint(30, 200)))
        else:              # all zeros / all ones
            body = bytes([0xFF if rng.random() < 0.5 else 0]) * rng.randint(46, 1500)
        if ep is not None and kind != 0 and len(body) >= 6:
            body = body[:4] + ep.to_bytes(2, "big") + body[6:]
        frame = dmac + src + b"\x88\xb5" + body
        if len(frame) < 60:
            frame += b"\0" * (60 - len(frame))
        s.send(frame)
    return 0


if __name__ == "__main__":
    sys.exit(main())
