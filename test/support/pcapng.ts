// pcapng blocks for hand-made captures (little-endian).

/** One block: its type, its body padded to 32 bits, its length before and after. */
export function pcapngBlock(type: number, body: Buffer): Buffer {
  const pad = (4 - (body.length % 4)) % 4;
  const b = Buffer.alloc(12 + body.length + pad);
  b.writeUInt32LE(type, 0);
  b.writeUInt32LE(b.length, 4);
  body.copy(b, 8);
  b.writeUInt32LE(b.length, b.length - 4);
  return b;
}
