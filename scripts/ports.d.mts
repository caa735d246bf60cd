/** A port that was free a moment ago, below the ephemeral range, held by this process from now on. */
export function freePort(host?: string): Promise<number>;
