// Runs one command: parse, run, report, clean up. Ctrl-C aborts the call in flight through
// an AbortSignal; the cleanups (closing transports, which stops the servers) run on every
// path before the exit code is returned.
import { parseCommandLine, USAGE } from "./args.mjs";
import { COMMANDS } from "./commands.mjs";
import { CliError, EXIT, interrupted } from "./errors.mjs";
import { createOutput } from "./output.mjs";

export async function main(argv) {
  const controller = new AbortController();
  const cleanups = [];
  let out = createOutput();
  const onSignal = (signal) => {
    // A second Ctrl-C means "now": exiting still stops the servers (the addon's exit hook).
    if (controller.signal.aborted) process.exit(controller.signal.reason.exitCode);
    controller.abort(interrupted(signal));
  };
  const signals = ["SIGINT", "SIGTERM"].map((signal) => [signal, () => onSignal(signal)]);
  for (const [signal, handler] of signals) process.on(signal, handler);
  // `mcp-native tools | head` closes the pipe early; that is the reader's choice, not a failure.
  process.stdout.on("error", (error) => {
    if (error.code === "EPIPE") process.exit(EXIT.OK);
    throw error;
  });

  let code;
  try {
    const parsed = parseCommandLine(argv);
    if (parsed.command === "help") {
      process.stdout.write(USAGE);
      return EXIT.OK;
    }
    out = createOutput({ json: parsed.options.json, verbose: parsed.options.verbose });
    code = await COMMANDS[parsed.command]({
      ...parsed,
      out,
      signal: controller.signal,
      onCleanup: (fn) => cleanups.push(fn),
    });
  } catch (error) {
    code = report(out, error);
  } finally {
    await Promise.allSettled(cleanups.reverse().map((fn) => fn()));
    for (const [signal, handler] of signals) process.off(signal, handler);
  }
  // A signal that arrived while the command was finishing still decides the exit code.
  return controller.signal.aborted ? controller.signal.reason.exitCode : code;
}

function report(out, error) {
  if (error instanceof CliError) {
    out.error(error.message, error.detail);
    return error.exitCode;
  }
  // Anything else comes from the library once connected: the server or the link failed us.
  out.error(error?.message ?? String(error));
  out.verbose(error?.stack ?? "");
  return EXIT.CONNECTION;
}
