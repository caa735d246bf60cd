// The directory a command writes its captures, topologies and records into
// (generate's and demo's --out-dir). It is created if missing; one that
// already holds files is refused unless the operator said to replace them
// (--force), as an --out file that holds records is refused without --append.
import { accessSync, constants, mkdirSync, readdirSync, statSync, type Stats } from "node:fs";
import { dirname, resolve } from "node:path";
import { OutputError } from "@rdma-telemetry/exporter";

function stat(path: string, what: string): Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch (err) {
    throw new OutputError(`${what}: cannot use ${path} (${(err as Error).message})`);
  }
}

/**
 * Makes `dir` ready to be written: created (with its missing parents) when
 * absent, refused when it is a file, cannot be created or written, or already
 * holds files and `force` is not given. `what` names the option in messages.
 */
export function prepareOutDir(dir: string, force: boolean, what = `--out-dir ${dir}`): void {
  const missing: string[] = [];
  let path = resolve(dir);
  let found = stat(path, what);
  while (!found) {
    missing.unshift(path);
    const up = dirname(path);
    if (up === path) break;
    path = up;
    found = stat(path, what);
  }
  if (found && !found.isDirectory()) throw new OutputError(`${what}: ${path} is a file, not a directory`);
  if (missing.length === 0) {
    const entries = readdirSync(path);
    if (entries.length > 0 && !force) {
      const shown = entries.sort().slice(0, 3).join(", ") + (entries.length > 3 ? `, and ${entries.length - 3} more` : "");
      throw new OutputError(`${what} already holds files (${shown}): choose a new or empty directory, or give --force to overwrite them`);
    }
  }
  // One level at a time: a place where a directory cannot be made says why.
  for (const m of missing) {
    try {
      mkdirSync(m);
    } catch (err) {
      throw new OutputError(`${what}: cannot create ${m} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  }
  try {
    accessSync(resolve(dir), constants.W_OK);
  } catch (err) {
    throw new OutputError(`${what}: cannot write there (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}
