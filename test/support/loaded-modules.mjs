// Preloaded with --import: at exit, prints on stderr whether the process
// loaded @platformatic/kafka ("@platformatic/kafka loaded: true|false").
import { registerHooks } from "node:module";

let loaded = false;
registerHooks({
  resolve(specifier, context, next) {
    const r = next(specifier, context);
    if (r.url.includes("/@platformatic/kafka/")) loaded = true;
    return r;
  },
});
process.on("exit", () => process.stderr.write(`@platformatic/kafka loaded: ${loaded}\n`));
