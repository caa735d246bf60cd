// The software switch and its P4Runtime server in a process of their own, as a
// real switch is a process of its own: the digest and write benchmarks
// measure the controller side, not the switch sharing its event loop and heap.
//   argv[2]: "virtual" or "live" clock
// Messages: {digests: N, digestId} generates N message digests and answers {sent}.
import { P4RuntimeServer } from "@rdma-telemetry/switch";
import { SoftwareSwitch } from "@rdma-telemetry/switch";

const send = (m: unknown) => process.send!(m);
const sw = new SoftwareSwitch({ clock: process.argv[2] === "live" ? "live" : "virtual" });
const server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
const port = await server.listen("127.0.0.1:0");
send({ port });
process.on("message", async (m: { digests?: number; digestId?: number }) => {
  if (!m.digests) return;
  const base = 1_800_000_000_000_000_000n;
  for (let i = 0; i < m.digests; i++) {
    // msg_digest_t members: seq, mode, flags, src, dst, dest_qp, first_psn, last_psn, bytes, packets,
    // retransmitted, ecn_ce, first_ts, fct_ns, gap_ns, extra x3, straddled, cnp
    sw.digests.add(m.digestId!, [i, 1, 1, 0x0a000101 + (i & 7), 0x0a000102, 0x2000 + (i & 63), i & 0xffffff, (i + 63) & 0xffffff, 262144, 64, 0, 0, i * 1000, 21000, 4000000, 0, 0, 0, 0, 0], base + BigInt(i) * 1000n);
    if ((i & 4095) === 4095) await new Promise((r) => setImmediate(r));
  }
  sw.digests.flushAll(base + BigInt(m.digests) * 1000n);
  send({ sent: sw.digests.sentSamples });
});
// Exit when the benchmark lets go (a clean exit also writes --cpu-prof profiles).
process.on("disconnect", () => process.exit(0));
