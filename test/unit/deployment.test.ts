// docker-compose.yml and the Dockerfile cannot be run where there is no Docker
// engine; what they depend on in this repository is checked here.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { expect, test } from "vitest";
import { parseConfig } from "../../p4runtime-controller/src/config.js";

const root = resolve(import.meta.dirname, "../..");
const read = (f: string) => readFileSync(join(root, f), "utf8");

/** The workspace packages by name: their folders. */
const workspaces = new Map<string, string>(
  (JSON.parse(read("package.json")) as { workspaces: string[] }).workspaces.map((dir) => [(JSON.parse(read(`${dir}/package.json`)) as { name: string }).name, dir]),
);

/** Every repository file the command's code imports, transitively (relative imports and the workspace packages, with their package.json). */
function importGraph(entry: string): Set<string> {
  const seen = new Set<string>();
  const todo = [join(root, entry)];
  while (todo.length) {
    const f = todo.pop()!;
    if (seen.has(f)) continue;
    seen.add(f);
    if (f.endsWith(".json")) continue;
    for (const m of readFileSync(f, "utf8").matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
      const spec = m[1]!;
      if (spec.startsWith(".")) {
        const target = resolve(dirname(f), spec.replace(/\.js$/, ".ts"));
        if (existsSync(target) && statSync(target).isFile()) todo.push(target);
        else if (existsSync(target.replace(/\.ts$/, ".js"))) todo.push(target.replace(/\.ts$/, ".js"));
        continue;
      }
      const pkg = /^(@rdma-telemetry\/[\w-]+)(?:\/proto\/(.+))?$/.exec(spec);
      const dir = pkg && workspaces.get(pkg[1]!);
      if (!dir) continue;
      todo.push(join(root, dir, "package.json"), join(root, dir, pkg[2] ? `src/generated/${pkg[2]}.ts` : "src/index.ts"));
    }
  }
  return seen;
}

test("the controller image copies everything the rdma-telemetry command imports, and the compiled P4 it loads", () => {
  const copied = [...read("Dockerfile").matchAll(/^COPY\s+(.+?)\s+\S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
  const covered = (f: string) => copied.some((c) => f === c || f.startsWith(c.replace(/\/?$/, "/")));
  const files = [...importGraph("bin/rdma-telemetry.ts")].map((f) => relative(root, f));
  expect(files.length).toBeGreaterThan(30);
  expect(files.filter((f) => !covered(f))).toEqual([]);
  for (const f of readdirSync(join(root, "p4/build"))) expect(covered(`p4/build/${f}`)).toBe(true);
  expect(read("Dockerfile")).toMatch(/^FROM node:\d+\.\d+[\w.-]*$/m);
});

test("docker-compose pins every image, runs the Kafka the tests default to, and mounts a valid controller config", () => {
  const compose = read("docker-compose.yml");
  const images = [...compose.matchAll(/^\s+image:\s*(\S+)/gm)].map((m) => m[1]!);
  expect(images.length).toBeGreaterThanOrEqual(4);
  for (const image of images) expect(image, image).toMatch(/^[\w./-]+:(?!latest$)[\w.-]+$/);
  const kafka = images.find((i) => i.startsWith("apache/kafka:"))!;
  const pinned = read("scripts/kafka/pom.xml").match(/<kafka\.version>([\d.]+)<\/kafka\.version>/)![1]!;
  expect(kafka.split(":")[1]!.split(".").slice(0, 2)).toEqual(pinned.split(".").slice(0, 2));
  // The config the controller service mounts, with the image's /app as this checkout.
  const mount = compose.match(/-\s*\.\/(deploy\/[\w.-]+\.json):\/config\/controller\.json/)![1]!;
  const cfg = parseConfig(JSON.parse(read(mount).replaceAll("/app/", `${root}/`)));
  expect(cfg.switch.address).toBe("bmv2:9559");
  expect(existsSync(cfg.pipeline.p4info) && existsSync(cfg.pipeline.deviceConfig)).toBe(true);
  expect(compose).toContain("--grpc-server-addr 0.0.0.0:9559");
});

test("the fabric profile runs a controller per switch with --digests-only, an exporter group of two, and valid configs", () => {
  const compose = read("docker-compose.yml");
  expect(compose).toMatch(/profiles: \["fabric"\]/);
  expect(compose).toContain('"--digests-only"');
  expect(compose).toMatch(/command: \["exporter", "--kafka-brokers", "kafka:9092"/);
  expect(compose).toMatch(/replicas: 2/);
  const ids = ["tor-c", "tor-s"].map((t) => {
    expect(compose).toContain(`./deploy/fabric/${t}.json:/config/tor.json:ro`);
    const cfg = parseConfig(JSON.parse(read(`deploy/fabric/${t}.json`).replaceAll("/app/", `${root}/`)));
    expect(existsSync(cfg.pipeline.p4info)).toBe(true);
    return cfg.switch.switchId;
  });
  expect(ids).toEqual(["tor-c", "tor-s"]);
  // The exporter members name every switch of the fabric (docs/operations.md: a switch named is awaited in every partition).
  const exporter = /command: \["exporter", (.*)\]/.exec(compose)![1]!.split(", ").map((a) => JSON.parse(a) as string);
  expect(exporter.flatMap((a, i) => (exporter[i - 1] === "--switch-id" ? [a] : []))).toEqual(ids);
});
