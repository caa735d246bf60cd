// Every package throws errors of its own root, with a stable code and
// whether a retry may help (the kafkajs way), from real failures.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { BadDigestError, ContractError, decodeDigest } from "../../contract/src/index.js";
import { ConfigError, ControllerError, parseConfig } from "../../p4runtime-controller/src/index.js";
import { ExporterError, JsonlSink, KafkaConnectError, OutputError } from "../../exporter/src/index.js";
import { CaptureError, openCapture, TrafficError } from "../../traffic/src/index.js";
import { P4RuntimeError, P4Schema } from "../../p4runtime/src/index.js";

const dir = mkdtempSync(join(tmpdir(), "error-roots-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("nothing was thrown");
}

test("contract: a digest that does not decode is a ContractError, BAD_DIGEST, not retriable", () => {
  const e = thrown(() => decodeDigest("no_such_digest", []));
  expect(e).toBeInstanceOf(BadDigestError);
  expect(e).toBeInstanceOf(ContractError);
  expect(e).toMatchObject({ code: "BAD_DIGEST", retriable: false });
});

test("controller: a bad config is a ControllerError, BAD_CONFIG, naming the field", () => {
  const e = thrown(() => parseConfig({ switch: { address: 7 } }));
  expect(e).toBeInstanceOf(ConfigError);
  expect(e).toBeInstanceOf(ControllerError);
  expect(e).toMatchObject({ code: "BAD_CONFIG", retriable: false });
  expect((e as Error).message).toMatch(/switch\.address/);
});

test("exporter: an output file that exists is an ExporterError, BAD_OUTPUT; a broker away is retriable, refused credentials are not", () => {
  const file = join(dir, "records.jsonl");
  writeFileSync(file, '{"type":"io"}\n');
  const e = thrown(() => new JsonlSink(file, "create"));
  expect(e).toBeInstanceOf(OutputError);
  expect(e).toBeInstanceOf(ExporterError);
  expect(e).toMatchObject({ code: "BAD_OUTPUT", retriable: false });
  const away = new KafkaConnectError({ cause: "connection", message: "no broker" });
  expect(away).toBeInstanceOf(ExporterError);
  expect(away).toMatchObject({ code: "KAFKA_CONNECTION", retriable: true });
  expect(new KafkaConnectError({ cause: "authentication", message: "refused" })).toMatchObject({ code: "KAFKA_AUTHENTICATION", retriable: false });
});

test("traffic: a capture that is not one is a TrafficError, BAD_CAPTURE", () => {
  const file = join(dir, "not.pcap");
  writeFileSync(file, "this is not a capture at all");
  const e = thrown(() => openCapture(file));
  expect(e).toBeInstanceOf(CaptureError);
  expect(e).toBeInstanceOf(TrafficError);
  expect(e).toMatchObject({ code: "BAD_CAPTURE", retriable: false });
});

test("p4runtime: a P4Info lookup that fails is a P4RuntimeError with a gRPC code", () => {
  const e = thrown(() => P4Schema.fromJson("{}").tables.get("nope"));
  expect(e).toBeInstanceOf(P4RuntimeError);
  expect(e).toMatchObject({ retriable: false });
  expect(typeof (e as P4RuntimeError).code).toBe("string");
});

test("switch: a device config it does not run is a SwitchError with a code, naming the construct", async () => {
  const { CompiledProgram, SwitchError } = await import("../../switch/src/index.js");
  const json = JSON.parse(readFileSync(new URL("../../p4/build/telemetry.json", import.meta.url), "utf8")) as { pipelines: Array<{ tables: Array<{ key: Array<{ match_type: string }> }> }> };
  const keyed = json.pipelines[0]!.tables.find((t) => t.key.length > 0)!;
  keyed.key[0]!.match_type = "no_such_match_kind";
  const e = thrown(() => new CompiledProgram(json as never));
  expect(e).toBeInstanceOf(SwitchError);
  expect((e as InstanceType<typeof SwitchError>).code).toBe("UNSUPPORTED_PROGRAM");
  expect((e as Error).message).toMatch(/no_such_match_kind/);
});
