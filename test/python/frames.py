"""The frames both client scripts send in by PacketOut."""
import struct


def ipv4_frame(dst, src="10.0.1.1"):
    """Ethernet + IPv4 + UDP to 4791 (RoCEv2's port) with a zero payload."""
    ip = lambda a: bytes(int(x) for x in a.split("."))
    udp = struct.pack("!HHHH", 49152, 4791, 8 + 32, 0) + bytes(32)
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0, ip(src), ip(dst))
    csum = sum(struct.unpack("!10H", hdr))
    csum = (csum & 0xFFFF) + (csum >> 16)
    csum = ~((csum & 0xFFFF) + (csum >> 16)) & 0xFFFF
    hdr = hdr[:10] + struct.pack("!H", csum) + hdr[12:]
    return bytes.fromhex("020000000002020000000001") + b"\x08\x00" + hdr + udp
