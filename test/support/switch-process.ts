// The software switch and its P4Runtime server as a process of their own, as
// a real switch is: a test can SIGKILL it and start another on the same port.
//   argv[2]: the TCP port to listen on (0: any); live clock.
// Messages in: { frames: [{ port, hex }] } processes frames at the switch's clock.
//   { query: "digests" }: answered, once the digest lists of the frames before
//   it are out (their max timeout passed), by { digests: { sentLists, unackedLists } }.
// Messages out: { port } once listening; { processed } after each batch of frames.
import { P4RuntimeServer } from "../../switch/src/p4runtime/server.js";
import { SoftwareSwitch } from "../../switch/src/software-switch.js";

const sw = new SoftwareSwitch({ clock: "live" });
const server = new P4RuntimeServer(sw, { deviceId: 1n, cpuPort: 510 });
const port = await server.listen(`127.0.0.1:${process.argv[2] ?? "0"}`);
// Digest lists go out when their timeout passes: tick the live clock.
setInterval(() => sw.tick(), 1).unref();
process.send!({ port });
process.on("message", (m: { frames?: Array<{ port: number; hex: string }>; query?: "digests" }) => {
  if (m.query === "digests") {
    // The ticks above send a pending list within its max timeout (a few ms in the tests' configs).
    setTimeout(() => process.send!({ digests: { sentLists: sw.digests.sentLists, unackedLists: sw.digests.unackedLists } }), 20);
    return;
  }
  for (const f of m.frames ?? []) sw.process({ port: f.port, data: Buffer.from(f.hex, "hex") });
  process.send!({ processed: m.frames?.length ?? 0 });
});
process.on("disconnect", () => process.exit(0));
