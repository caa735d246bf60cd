"""Sends the frames of a pcap on Linux interfaces (AF_PACKET), paced by the
capture's own timestamps times a slow-down factor, and receives what comes
back on every interface. Writes a JSON report of the send times
(CLOCK_MONOTONIC ns) and the frames received.

Usage: python3 inject.py PCAP PORTMAP_JSON SLOWDOWN REPORT_JSON
  PORTMAP_JSON: {"<frame index>": "<interface>", ...} is too big; instead
  {"ifaces": {"<port>": "<iface>"}, "ports": [<port of frame 0>, ...]}
"""
import json
import select
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    nanos = magic == 0xA1B23C4D
    off = 24
    out = []
    while off < len(data):
        sec, frac, incl, orig = struct.unpack("<IIII", data[off:off + 16])
        ts = sec * 1_000_000_000 + (frac if nanos else frac * 1000)
        out.append((ts, data[off + 16:off + 16 + incl]))
        off += 16 + incl
    return out


def main(pcap, portmap, slowdown, report):
    frames = read_pcap(pcap)
    with open(portmap) as f:
        pm = json.load(f)
    ifaces = pm["ifaces"]
    ports = pm["ports"]
    socks = {}
    for port, name in ifaces.items():
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((name, 0))
        s.setblocking(False)
        socks[int(port)] = s
    by_fd = {s.fileno(): p for p, s in socks.items()}
    received = []
    sent = []

    def drain(timeout, until_count=None):
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0 or (until_count is not None and len(received) >= until_count):
                return
            r, _, _ = select.select(list(socks.values()), [], [], left)
            for s in r:
                try:
                    pkt, addr = s.recvfrom(65535)
                except BlockingIOError:
                    continue
                if addr[2] == socket.PACKET_OUTGOING:
                    continue
                received.append({"port": by_fd[s.fileno()], "hex": pkt.hex()})

    t0_cap = frames[0][0]
    t0 = time.monotonic_ns()
    for i, (ts, frame) in enumerate(frames):
        due = t0 + (ts - t0_cap) * slowdown
        while True:
            now = time.monotonic_ns()
            if now >= due:
                break
            drain(min(0.0005, (due - now) / 1e9))
        sent.append(time.monotonic_ns())
        before = len(received)
        socks[ports[i]].send(frame)
        # BMv2 reads each port in a thread of its own: waiting for this packet to
        # come out before sending the next keeps the order across ports.
        drain(0.05, until_count=before + 1)
    drain(1.0)
    with open(report, "w") as f:
        json.dump({"sent_monotonic_ns": sent, "received": received}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4])
