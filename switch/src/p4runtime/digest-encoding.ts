// The StreamMessageResponse carrying a DigestList, written straight to bytes:
// a list of a thousand samples of twenty members is forty thousand protobuf
// objects the generic encoder would build and walk. Byte-for-byte the same
// wire format (p4/v1/p4runtime.proto, p4/v1/p4data.proto):
//   StreamMessageResponse.digest = 3 { digest_id = 1, list_id = 2,
//     data = 3 [P4Data.struct = 5 { members = 1 [P4Data.bitstring = 1] }], timestamp = 4 }
import { bitstringSize, delimitedSize, varintSize, varintSize64, WireWriter } from "@rdma-telemetry/p4runtime";
import type { Value } from "../bmv2/table.js";

/** Member lengths of the last list encoded, reused between lists. */
let lengths = new Int32Array(1 << 14);

/** Encoded StreamMessageResponse { digest: DigestList } for `samples` of bit<W> members. */
export function encodeDigestListMessage(digestId: number, listId: bigint, timestampNs: bigint, samples: readonly Value[][]): Buffer {
  // Sizes first: each member is P4Data{bitstring} = 0x0a len bytes; each sample
  // is its struct's length followed by its members' lengths.
  let total = 0;
  for (const s of samples) total += s.length + 1;
  if (lengths.length < total) lengths = new Int32Array(total * 2);
  let dataLen = 0;
  let k = 0;
  for (const s of samples) {
    const at = k++;
    let structLen = 0;
    for (const v of s) {
      const n = bitstringSize(v);
      lengths[k++] = n;
      structLen += delimitedSize(delimitedSize(n)); // P4StructLike.members = P4Data{bitstring}
    }
    lengths[at] = structLen;
    dataLen += delimitedSize(delimitedSize(structLen)); // DigestList.data = P4Data{struct}
  }
  const listLen = 1 + varintSize(digestId) + 1 + varintSize64(listId) + dataLen + 1 + varintSize64(timestampNs);
  const w = WireWriter.alloc(delimitedSize(listLen));
  w.head(0x1a, listLen);
  w.head(0x08, digestId);
  w.head64(0x10, listId);
  k = 0;
  for (const s of samples) {
    const structLen = lengths[k++]!;
    w.head(0x1a, delimitedSize(structLen));
    w.head(0x2a, structLen);
    for (const v of s) {
      const n = lengths[k++]!;
      w.head(0x0a, delimitedSize(n));
      w.head(0x0a, n);
      w.bitstring(v, n);
    }
  }
  w.head64(0x20, timestampNs);
  return w.finish("DigestList");
}
