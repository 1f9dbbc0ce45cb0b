#!/usr/bin/env python3
"""authinject.py - forged and replayed rmpp frames for tests/wire/auth.sh.

  authinject.py inject PCAP DPORT STATE   pick the first authenticated DATA
      frame with a message to udp port DPORT in the capture, send it again
      unchanged (a replay) and once with one data byte flipped and the
      CRC32C recomputed (a forgery: only the MAC can tell), both from the
      original source address (raw socket, root); record both in STATE.
  authinject.py check PCAP KEYHEX STATE   the capture holds the original,
      its replay (byte-identical, MAC valid under the job key) and the
      forgery (CRC valid, MAC invalid); prints what it found.

The MAC trailer (rmpp/rmpp_auth.h): seq (8 bytes, big endian) then a
Poly1305 tag (16 bytes) over everything before it, under the one-time key
BLAKE2b-256(key = job key, src_ep | src_epoch | seq) (header bytes 6..11).
"""
import hashlib
import hmac
import json
import socket
import struct
import sys

AUTH_SEQ, AUTH_TAG = 8, 16
AUTH_LEN = AUTH_SEQ + AUTH_TAG
RMPP_HDR, PKT_DATA, F_MSG, F_CRC = 40, 3, 0x20, 0x10


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def udp_frames(path):
    """(src ip, src port, dst ip, dst port, payload) of every UDP/IPv4 packet."""
    with open(path, "rb") as f:
        raw = f.read()
    magic = struct.unpack("<I", raw[:4])[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    link = struct.unpack(end + "I", raw[20:24])[0]
    off = 24
    while off + 16 <= len(raw):
        incl = struct.unpack(end + "I", raw[off + 8:off + 12])[0]
        pkt = raw[off + 16:off + 16 + incl]
        off += 16 + incl
        l2 = 14 if link == 1 else 16 if link == 113 else 0
        if link == 1 and pkt[12:14] != b"\x08\x00":
            continue
        ip = pkt[l2:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 17:
            continue
        ihl = (ip[0] & 15) * 4
        udp = ip[ihl:]
        sport, dport, ulen = struct.unpack(">HHH", udp[:6])
        yield socket.inet_ntoa(ip[12:16]), sport, socket.inet_ntoa(ip[16:20]), dport, udp[8:ulen]


def frame_len(p):
    return RMPP_HDR + 4 * p[26] + struct.unpack(">H", p[2:4])[0]


def crc_ok(p):
    n = frame_len(p)
    body = p[:36] + b"\0\0\0\0" + p[40:n]
    return crc32c(body) == struct.unpack(">I", p[36:40])[0]


def poly1305(key, msg):
    r = int.from_bytes(key[:16], "little") & 0x0FFFFFFC0FFFFFFC0FFFFFFC0FFFFFFF
    s = int.from_bytes(key[16:], "little")
    p, acc = (1 << 130) - 5, 0
    for i in range(0, len(msg), 16):
        block = msg[i:i + 16] + b"\x01"
        acc = (acc + int.from_bytes(block, "little")) * r % p
    return ((acc + s) & ((1 << 128) - 1)).to_bytes(16, "little")


def mac_ok(p, key):
    seq = p[-AUTH_LEN:-AUTH_TAG]
    otk = hashlib.blake2b(p[6:12] + seq, key=key, digest_size=32).digest()
    return hmac.compare_digest(poly1305(otk, p[:-AUTH_TAG]), p[-AUTH_TAG:])


def send_raw(src, sport, dst, dport, payload):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    udp = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload  # no UDP checksum
    iph = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                      socket.inet_aton(src), socket.inet_aton(dst))
    s.sendto(iph + udp, (dst, 0))
    s.close()


def inject(pcap, dport, state):
    for src, sport, dst, dp, p in udp_frames(pcap):
        if dp != dport or len(p) < RMPP_HDR + AUTH_LEN or p[0] & 15 != PKT_DATA or not p[1] & F_MSG:
            continue
        n = frame_len(p)
        if n + AUTH_LEN > len(p) or n <= RMPP_HDR + 4 * p[26]:
            continue
        forged = bytearray(p)
        forged[n - 1] ^= 0x5A  # the last data byte
        if p[1] & F_CRC:
            struct.pack_into(">I", forged, 36, crc32c(bytes(forged[:36]) + b"\0\0\0\0" + bytes(forged[40:n])))
        send_raw(src, sport, dst, dp, p)
        send_raw(src, sport, dst, dp, bytes(forged))
        psn = struct.unpack(">I", p[16:20])[0]
        json.dump({"orig": p.hex(), "forged": bytes(forged).hex(), "psn": psn}, open(state, "w"))
        print(f"authinject: replayed DATA psn {psn} ({len(p)} bytes) {src}:{sport} -> {dst}:{dp}; "
              f"sent a forgery (data byte {n - 1} flipped, CRC32C recomputed)")
        return 0
    print(f"authinject: FAIL: no authenticated DATA frame to port {dport} in {pcap}")
    return 1


def check(pcap, keyhex, state):
    key = bytes.fromhex(keyhex)
    st = json.load(open(state))
    orig, forged = bytes.fromhex(st["orig"]), bytes.fromhex(st["forged"])
    frames = [p for *_, p in udp_frames(pcap)]
    n_orig, n_forged = frames.count(orig), frames.count(forged)
    bad = []
    if n_orig != 2:
        bad.append(f"the original frame appears {n_orig} times, want 2 (it and its replay)")
    if n_forged != 1:
        bad.append(f"the forgery appears {n_forged} times, want 1")
    if not mac_ok(orig, key):
        bad.append("the original's MAC does not verify under the job key")
    if mac_ok(forged, key):
        bad.append("the forgery's MAC verifies")
    if not crc_ok(forged):
        bad.append("the forgery's CRC32C is wrong (it must pass all but the MAC)")
    print(f"authinject: capture: {len(frames)} udp frames; original psn {st['psn']} x{n_orig} "
          f"(MAC {'valid' if mac_ok(orig, key) else 'INVALID'}), forgery x{n_forged} "
          f"(CRC {'valid' if crc_ok(forged) else 'INVALID'}, MAC {'valid' if mac_ok(forged, key) else 'invalid'})")
    for b in bad:
        print("authinject: FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "inject":
        sys.exit(inject(a[1], int(a[2]), a[3]))
    if len(a) == 4 and a[0] == "check":
        sys.exit(check(a[1], a[2], a[3]))
    sys.exit(__doc__)
