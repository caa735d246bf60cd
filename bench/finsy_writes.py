"""The same batched table writes as bench/run.ts's "writes", from finsy (PyPI),
against the same P4Runtime target. Prints figures only.

Usage: python3 bench/finsy_writes.py HOST:PORT P4INFO_JSON_OR_TXTPB BMV2_JSON
"""
import asyncio
import os
import sys
import time
from pathlib import Path

import finsy as fy


async def main(address: str, p4info: str, blob: str) -> None:
    async def ready(sw: fy.Switch) -> None:
        def watch(i: int, rnd: int) -> fy.P4TableEntry:
            return fy.P4TableEntry(
                "flow_watchlist",
                match=fy.P4TableMatch(src=0x0B000000 + (i >> 8), dst=0x0B010000 + (i & 255), dest_qp=rnd * 4096 + i),
                action=fy.P4TableAction("flow_tracker.watch", flow_slot=i, flow_epoch=rnd),
            )

        for batch in (1, 64, 1024):
            rnd = 200 + batch
            t0 = time.perf_counter()
            for sign in (1, -1):
                for i in range(0, 1024, batch):
                    ents = [watch(i + k, rnd) for k in range(batch)]
                    await sw.write([+e for e in ents] if sign > 0 else [-e for e in ents])
            dt = time.perf_counter() - t0
            print(f"finsy writes: 2048 table writes (1024 inserts, 1024 deletes) in batches of {batch}: {round(2048 / dt):,} writes/s")
        rnd = 1
        await sw.insert([watch(i, rnd) for i in range(1024)])
        times = []
        for _ in range(20):
            updates = [-watch(i, rnd) for i in range(1024)] + [+watch(i, rnd + 1) for i in range(1024)]
            t0 = time.perf_counter()
            await sw.write(updates)
            times.append((time.perf_counter() - t0) * 1000)
            rnd += 1
        times.sort()
        print(f"finsy rotation: swap a 1024-entry watchlist in one write: median {times[10]:.1f} ms, max {times[19]:.1f} ms", flush=True)
        os._exit(0)

    opts = fy.SwitchOptions(p4info=Path(p4info), p4blob=Path(blob), ready_handler=ready, initial_election_id=50)
    sw = fy.Switch("bench", address, opts)
    try:
        await sw.run()
    except asyncio.CancelledError:
        pass


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
