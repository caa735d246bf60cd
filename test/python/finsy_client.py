"""finsy (0.30) against `rdma-telemetry switch`: routes to `drop` and to a
port, packets sent in by PacketOut, default entries read, modified and reset,
`delete_all()`, then the digest fixture pushed and digests configured with
max_timeout_ns = 0.

Usage: finsy_client.py ADDR TELEMETRY_P4INFO_TXT TELEMETRY_JSON DIGEST_P4INFO_TXT DIGEST_JSON
Prints one JSON object per check on stdout; the vitest test asserts them.
"""
import asyncio
import json
import sys
from pathlib import Path

import finsy as fy
from finsy.proto import p4r

from frames import ipv4_frame


def out(check, **fields):
    print(json.dumps({"check": check, **fields}), flush=True)


# finsy writes stream messages without serialising them: two tasks writing to
# the one StreamChannel at once (a PacketOut here, a DigestListAck in the
# digest reader) can end the stream, and finsy then opens another that the
# switch refuses for want of arbitration. Every stream write holds this lock.
STREAM_WRITE = asyncio.Lock()


async def packet_out(sw, payload):
    # The telemetry program declares no packet_out header, which finsy's
    # P4PacketOut needs: the stream message goes as it is.
    async with STREAM_WRITE:
        await sw._p4client.send(p4r.StreamMessageRequest(packet=p4r.PacketOut(payload=payload)))


def action_name(sw, entry):
    # finsy decodes an action by its alias; the full name is in the P4Info.
    return sw.p4info.actions[entry.action.name].name if entry.action is not None else None


def prefix(value):
    addr, length = value
    return "%s/%d" % (".".join(str((addr >> s) & 0xFF) for s in (24, 16, 8, 0)), length)


async def telemetry(addr, p4info, device_json):
    opts = fy.SwitchOptions(p4info=Path(p4info), p4blob=Path(device_json), p4force=True)
    async with fy.Switch("telemetry", addr, opts) as sw:
        await sw.insert([
            fy.P4TableEntry("ipv4_routes", match=fy.P4TableMatch(dst_addr="10.1.0.0/16"), action=fy.P4TableAction("drop")),
            fy.P4TableEntry("ipv4_routes", match=fy.P4TableMatch(dst_addr="10.2.0.0/16"), action=fy.P4TableAction("route", port=3)),
            fy.P4TableEntry("io_watchlist", match=fy.P4TableMatch(host="10.0.1.1", target="10.0.2.1"), action=fy.P4TableAction("io_tracker.watch", gen=1)),
        ])
        routes = sorted([prefix(e.match["dst_addr"]), action_name(sw, e)] for e in [e async for e in sw.read(fy.P4TableEntry("ipv4_routes"))])
        out("routes", routes=routes)
        await packet_out(sw, ipv4_frame("10.1.0.5"))
        await packet_out(sw, ipv4_frame("10.2.0.5"))
        out("sent", frames=[ipv4_frame("10.1.0.5").hex(), ipv4_frame("10.2.0.5").hex()])

        defaults = {}
        for table in ("ipv4_routes", "io_watchlist", "telemetry_config"):
            (d,) = [e async for e in sw.read(fy.P4TableEntry(table, is_default_action=True))]
            defaults[table] = action_name(sw, d)
        out("defaults", actions=defaults)

        async def config_default():
            (d,) = [e async for e in sw.read(fy.P4TableEntry("telemetry_config", is_default_action=True))]
            return {k: int(d.action.args[k]) for k in ("mode", "epoch", "io_timeout_ns")}

        initial = await config_default()
        await sw.modify([fy.P4TableEntry("telemetry_config", is_default_action=True, action=fy.P4TableAction("set_config", mode=1, epoch=7, ts_scale=1, io_timeout_ns=5000, flow_timeout_ns=5000))])
        modified = await config_default()
        await sw.modify([fy.P4TableEntry("telemetry_config", is_default_action=True)])
        out("default_modify", initial=initial, modified=modified, reset=await config_default())

        await sw.modify([fy.P4TableEntry("telemetry_config", is_default_action=True, action=fy.P4TableAction("set_config", mode=1, epoch=9, ts_scale=1, io_timeout_ns=1, flow_timeout_ns=1))])
        try:
            await sw.delete_all()
        except Exception as e:  # reported to the test, which names it
            out("delete_all", error=str(e))
        else:
            # (The histograms' bucket tables hold constant entries: the program's, not deletable.)
            left = [e async for e in sw.read(fy.P4TableEntry()) if not str(e.table_id).endswith(".buckets")]
            out("delete_all", entries_left=len(left), config_after=await config_default())
        # Packets sent after the switch is emptied find no route and are dropped.
        await asyncio.sleep(0.2)


async def digests(addr, p4info, device_json):
    opts = fy.SwitchOptions(p4info=Path(p4info), p4blob=Path(device_json), p4force=True)
    async with fy.Switch("digest", addr, opts) as sw:
        await sw.insert([fy.P4DigestEntry("mac_learn_t", max_list_size=100, max_timeout_ns=0, ack_timeout_ns=1_000_000_000)])
        got = []

        async def collect():
            async for dl in sw.read_digests("mac_learn_t"):
                got.append(len(dl))
                async with STREAM_WRITE:
                    await sw.write([fy.P4DigestListAck(dl.digest_id, dl.list_id)])

        task = asyncio.create_task(collect())
        await asyncio.sleep(0.5)
        for i in range(3):
            await packet_out(sw, bytes.fromhex("02000000000f") + bytes.fromhex("0200000000%02x" % (i + 1)) + b"\x88\xb5" + bytes(46))
        # Up to 20 s: a loaded CI machine can take seconds to deliver them.
        for _ in range(200):
            if len(got) >= 3:
                break
            await asyncio.sleep(0.1)
        task.cancel()
        out("digests", lists=got)


async def main(addr, p4info, device_json, digest_p4info, digest_json):
    await telemetry(addr, p4info, device_json)
    await digests(addr, digest_p4info, digest_json)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
