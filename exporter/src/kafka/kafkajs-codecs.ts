// kafkajs ships gzip only (its other codecs throw "not implemented") and takes
// the others as plugins: snappy, lz4 and zstd as Kafka frames them, from the
// same WebAssembly and zlib codecs the default client uses (loaded at the
// first batch that needs one). Imported for its effect by every module that
// uses kafkajs, producing or consuming.
import kafkajs from "kafkajs";
import { platformaticKafka, type PlatformaticKafka } from "./platformatic-options.js";

// CompressionCodecs is not among the names Node finds in kafkajs's CommonJS exports: read off the module.
const { CompressionCodecs, CompressionTypes } = kafkajs;

let algorithms: PlatformaticKafka["compressionsAlgorithms"] | undefined;

for (const [type, name] of [[CompressionTypes.Snappy, "snappy"], [CompressionTypes.LZ4, "lz4"], [CompressionTypes.ZSTD, "zstd"]] as const) {
  const codec = async () => (algorithms ??= (await platformaticKafka()).compressionsAlgorithms)[name];
  CompressionCodecs[type] = () => ({
    compress: async (encoder: { buffer: Buffer }) => (await codec()).compressSync(encoder.buffer) as Buffer,
    decompress: async (buffer: Buffer) => (await codec()).decompressSync(buffer) as Buffer,
  });
}
