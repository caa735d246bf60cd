"""Frames on Linux interfaces (AF_PACKET) for the BMv2 tests: sends on the
host ends of the switch's veth pairs and receives what the switch sends back.

  python3 wire.py replay PCAP PORTMAP_JSON SLOWDOWN REPORT_JSON
      Sends the frames of a pcap paced by their own timestamps times SLOWDOWN;
      after each frame, waits (up to 50 ms) for it to leave the switch, so that
      order holds across ports. PORTMAP_JSON is
      {"ifaces": {"<port>": "<iface>"}, "ports": [<port of frame 0>, ...]}.
      Writes {"sent_monotonic_ns": [...], "received": [{"port", "hex"}]}.

  python3 wire.py serve PORTMAP_JSON
      One request per line on stdin, {"port": P, "hex": FRAME, "wait_ms": W};
      sends FRAME on port P's interface and answers one line on stdout,
      {"early": [...], "out": [{"port", "hex"}]}: what arrived before the send
      (should be nothing), and what came out within W ms (or 20 ms after the
      first frame out).
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
        sec, frac, incl, _orig = struct.unpack("<IIII", data[off:off + 16])
        ts = sec * 1_000_000_000 + (frac if nanos else frac * 1000)
        out.append((ts, data[off + 16:off + 16 + incl]))
        off += 16 + incl
    return out


class Wire:
    def __init__(self, ifaces):
        self.socks = {}
        for port, name in ifaces.items():
            # Protocol 0 until bound: a socket opened for ETH_P_ALL takes
            # frames of every interface (the loopback's gRPC traffic, say)
            # until bind() narrows it to one.
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            s.bind((name, ETH_P_ALL))  # Python puts the protocol in network order itself
            s.setblocking(False)
            self.socks[int(port)] = s
        self.by_fd = {s.fileno(): p for p, s in self.socks.items()}
        self.received = []

    def send(self, port, frame):
        self.socks[port].send(frame)

    def drain(self, timeout, until_count=None):
        """Receives for `timeout` s, or until `until_count` frames are held."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0 or (until_count is not None and len(self.received) >= until_count):
                return
            r, _, _ = select.select(list(self.socks.values()), [], [], left)
            for s in r:
                try:
                    pkt, addr = s.recvfrom(65535)
                except BlockingIOError:
                    continue
                # Our own sends show up as outgoing on the host end.
                if addr[2] == socket.PACKET_OUTGOING:
                    continue
                self.received.append({"port": self.by_fd[s.fileno()], "hex": pkt.hex()})

    def take(self):
        got, self.received = self.received, []
        return got


def replay(pcap, portmap, slowdown, report):
    frames = read_pcap(pcap)
    with open(portmap) as f:
        pm = json.load(f)
    wire = Wire(pm["ifaces"])
    ports = pm["ports"]
    sent = []
    t0_cap = frames[0][0]
    t0 = time.monotonic_ns()
    for i, (ts, frame) in enumerate(frames):
        due = t0 + (ts - t0_cap) * slowdown
        while True:
            now = time.monotonic_ns()
            if now >= due:
                break
            wire.drain(min(0.0005, (due - now) / 1e9))
        sent.append(time.monotonic_ns())
        before = len(wire.received)
        wire.send(ports[i], frame)
        # BMv2 takes frames from its ports in one thread, but not in arrival
        # order across ports: wait for this one to leave before the next.
        wire.drain(0.05, until_count=before + 1)
    wire.drain(1.0)
    with open(report, "w") as f:
        json.dump({"sent_monotonic_ns": sent, "received": wire.received}, f)


def serve(portmap):
    with open(portmap) as f:
        pm = json.load(f)
    wire = Wire(pm["ifaces"])
    for line in sys.stdin:
        req = json.loads(line)
        wire.drain(0)
        early = wire.take()
        wire.send(req["port"], bytes.fromhex(req["hex"]))
        # "count": how many frames to wait for (1 unless given), then 20 ms for stragglers.
        wire.drain(req["wait_ms"] / 1000, until_count=req.get("count", 1))
        if wire.received:
            wire.drain(0.02)
        sys.stdout.write(json.dumps({"early": early, "out": wire.take()}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1] == "replay":
        replay(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5])
    elif sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(f"unknown command {sys.argv[1]}")
