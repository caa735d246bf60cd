"""p4runtime-shell (0.0.6) against `rdma-telemetry switch`, as a user would
drive simple_switch_grpc: routes to `drop` and to a port, packets sent in by
PacketOut, default entries read, modified, reset and refused a DELETE, then
the digest fixture pushed and digests configured with max_timeout_ns = 0.

Usage: shell_client.py ADDR TELEMETRY_P4INFO_TXT TELEMETRY_JSON DIGEST_P4INFO_TXT DIGEST_JSON
Prints one JSON object per check on stdout; the vitest test asserts them.
"""
import json
import sys

import p4runtime_sh.shell as sh
from p4.v1 import p4runtime_pb2
from google.rpc import code_pb2
from p4runtime_sh.p4runtime import P4RuntimeWriteException

from frames import ipv4_frame


def out(check, **fields):
    print(json.dumps({"check": check, **fields}), flush=True)


def packet_out(payload):
    # The telemetry program declares no packet_out header, so p4runtime-shell's
    # PacketOut helper (which needs one) is bypassed for the raw stream message.
    msg = p4runtime_pb2.StreamMessageRequest()
    msg.packet.payload = payload
    sh.client.stream_out_q.put(msg)


def action_of(te):
    return te.action.action_name if te.action is not None else None


def main(addr, p4info, device_json, digest_p4info, digest_json):
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1), config=sh.FwdPipeConfig(p4info, device_json), verbose=False)

    drop = sh.TableEntry("ipv4_routes")(action="drop")
    drop.match["dst_addr"] = "10.1.0.0/16"
    drop.insert()
    fwd = sh.TableEntry("ipv4_routes")(action="route")
    fwd.match["dst_addr"] = "10.2.0.0/16"
    fwd.action["port"] = "3"
    fwd.insert()
    def prefix(e):
        m = e.match["dst_addr"].lpm
        return "%s/%d" % (".".join(str(b) for b in m.value.rjust(4, b"\0")), m.prefix_len)

    routes = sorted((prefix(e), action_of(e)) for e in sh.TableEntry("ipv4_routes").read())
    out("routes", routes=[[m, a] for m, a in routes])
    packet_out(ipv4_frame("10.1.0.5"))
    packet_out(ipv4_frame("10.2.0.5"))
    out("sent", frames=[ipv4_frame("10.1.0.5").hex(), ipv4_frame("10.2.0.5").hex()])

    defaults = {}
    for table in ("ipv4_routes", "io_watchlist", "telemetry_config"):
        (d,) = list(sh.TableEntry(table)(is_default=True).read())
        defaults[table] = action_of(d)
    out("defaults", actions=defaults)

    def config_default():
        (d,) = list(sh.TableEntry("telemetry_config")(is_default=True).read())
        return {p: int.from_bytes(d.action[p].value, "big") for p in ("mode", "epoch", "io_timeout_ns")}

    initial = config_default()
    mod = sh.TableEntry("telemetry_config")(is_default=True, action="set_config")
    for p, v in (("mode", "1"), ("epoch", "7"), ("ts_scale", "1"), ("io_timeout_ns", "5000"), ("flow_timeout_ns", "5000")):
        mod.action[p] = v
    mod.modify()
    modified = config_default()
    sh.TableEntry("telemetry_config")(is_default=True).modify()  # no action: back to the program's default
    out("default_modify", initial=initial, modified=modified, reset=config_default())

    try:
        sh.TableEntry("telemetry_config")(is_default=True).delete()
        out("default_delete", codes=["OK"])
    except P4RuntimeWriteException as e:
        out("default_delete", codes=[code_pb2.Code.Name(err.canonical_code) for _, err in e.errors])

    sh.teardown()

    # The digest fixture: every packet's source MAC by digest.
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1), config=sh.FwdPipeConfig(digest_p4info, digest_json), verbose=False)
    de = sh.DigestEntry("mac_learn_t")
    de.max_timeout_ns = 0
    de.max_list_size = 100
    de.ack_timeout_ns = 1_000_000_000
    de.insert()
    lists = sh.DigestList()
    for i in range(3):
        packet_out(bytes.fromhex("02000000000f") + bytes.fromhex("0200000000%02x" % (i + 1)) + b"\x88\xb5" + bytes(46))
    got = list(lists.sniff(timeout=5))
    out("digests", lists=[len(m.digest.data) for m in got])
    sh.teardown()


if __name__ == "__main__":
    import os
    import traceback

    try:
        main(*sys.argv[1:6])
        code = 0
    except Exception:  # the test reads the traceback from stderr
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    # p4runtime-shell's stream and digest threads do not end by themselves.
    os._exit(code)
