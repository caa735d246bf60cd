// The control endpoint's token: a secret the controller and the `mode`
// command share. Given in RDMA_TELEMETRY_CONTROL_TOKEN, or kept in a file
// only its owner can read (default: the state directory of this user,
// $XDG_STATE_HOME/rdma-telemetry/control-token, else
// ~/.local/state/rdma-telemetry/control-token). The controller writes the
// file, mode 0600, at its first start when it is absent.
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

export const TOKEN_ENV = "RDMA_TELEMETRY_CONTROL_TOKEN";

/** A token that cannot be used: the message names the file or variable and what is wrong. */
export class ControlTokenError extends Error {
  override readonly name = "ControlTokenError";
}

/** Where the token is kept unless told: this user's state directory. */
export function defaultTokenFile(env: NodeJS.ProcessEnv): string {
  return join(env.XDG_STATE_HOME || join(homedir(), ".local", "state"), "rdma-telemetry", "control-token");
}

/** Where the token comes from: the variable's value, else the file. */
export interface TokenSource {
  /** the token itself (RDMA_TELEMETRY_CONTROL_TOKEN) */
  value?: string;
  file: string;
}

const MIN_LENGTH = 16;

function checked(token: string, where: string): string {
  if (token.length < MIN_LENGTH) throw new ControlTokenError(`${where}: the control token must be at least ${MIN_LENGTH} characters (got ${token.length})`);
  if (/\s/.test(token)) throw new ControlTokenError(`${where}: the control token must not contain white space`);
  return token;
}

/** Reads the token file: it must be the owner's alone (no group or other permission). */
function readTokenFile(file: string): string {
  const mode = statSync(file).mode & 0o777;
  if (mode & 0o077) throw new ControlTokenError(`control token file ${file}: readable by other users (mode ${mode.toString(8)}); chmod 600 ${file}`);
  return checked(readFileSync(file, "utf8").replace(/\r?\n$/, ""), `control token file ${file}`);
}

/** The controller's token: the variable's, or the file's, the file written first when it is absent. */
export function controllerToken(src: TokenSource): { token: string; from: string; created: boolean } {
  if (src.value !== undefined) return { token: checked(src.value, TOKEN_ENV), from: TOKEN_ENV, created: false };
  try {
    return { token: readTokenFile(src.file), from: src.file, created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw wrap(err, src.file);
  }
  const token = randomBytes(32).toString("base64url");
  try {
    mkdirSync(dirname(src.file), { recursive: true, mode: 0o700 });
    writeFileSync(src.file, token + "\n", { mode: 0o600, flag: "wx" });
  } catch (err) {
    // Another controller made it first: use that one.
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return { token: readTokenFile(src.file), from: src.file, created: false };
    throw wrap(err, src.file);
  }
  return { token, from: src.file, created: true };
}

/** The token a client (`mode`) sends: the variable's, or the file's; never made here. */
export function clientToken(src: TokenSource): string {
  if (src.value !== undefined) return checked(src.value, TOKEN_ENV);
  try {
    return readTokenFile(src.file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") {
      throw new ControlTokenError(`no control token in ${src.file} (the controller writes it at its first start): give --control-token-file FILE or ${TOKEN_ENV}`);
    }
    throw wrap(err, src.file);
  }
}

function wrap(err: unknown, file: string): Error {
  return err instanceof ControlTokenError ? err : new ControlTokenError(`control token file ${file}: ${(err as Error).message}`);
}
