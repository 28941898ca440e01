// SPEC-AGENT18 A11, A12 (resolveStdioSpawnCommand) and A15 (terminateStdioProcess): the v18
// agent's helpers for spawning and stopping a stdio server itself. A12's Windows rules run
// here on real files with `platform: "win32"`: paths follow the host's node:path, as the
// agent's do.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { native, waitFor } from "./helpers";
import { proc } from "./proc";

type Options = import("../index.js").ResolveStdioSpawnOptions;

const cleanups: (() => void)[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A temporary directory holding `files` (path relative to it → text). */
function tree(files: Record<string, string> = {}): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "mcp-native-spawn-")));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

/** A cmd-shim `.cmd` as npm writes it; `prog` is its fallback interpreter. */
const npmShim = (script: string, prog = "node") =>
  [
    "@ECHO off",
    "GOTO start",
    ":find_dp0",
    "SET dp0=%~dp0",
    "EXIT /b",
    ":start",
    "SETLOCAL",
    "CALL :find_dp0",
    "",
    'IF EXIST "%dp0%\\node.exe" (',
    '  SET "_prog=%dp0%\\node.exe"',
    ") ELSE (",
    `  SET "_prog=${prog}"`,
    "  SET PATHEXT=%PATHEXT:;.JS;=;%",
    ")",
    "",
    `endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & "%_prog%"  "%dp0%\\${script}" %*`,
    "",
  ].join("\r\n");

const win = (cwd: string, env: Options["env"] = {}, extra: Partial<Options> = {}): Options => ({ cwd, env, platform: "win32", ...extra });
const resolve = (command: string, args: string[] | undefined, options: Options) =>
  native.resolveStdioSpawnCommand({ command, ...(args ? { args } : {}) }, options);
const viaCmd = (line: string, comspec = "cmd.exe") => ({
  cmd: [comspec, "/d", "/e:ON", "/v:OFF", "/c", line],
  windowsHide: true,
  detached: false,
  windowsVerbatimArguments: true,
});

describe("A11 resolveStdioSpawnCommand off Windows", () => {
  it("A11: not win32: the command and args as given, detached unless darwin, no file checks", async () => {
    const options = { cwd: "/nowhere", env: {} };
    const linux = await resolve("npx", ["-y", "a b", "%x%"], { ...options, platform: "linux" });
    expect(linux).toStrictEqual({ cmd: ["npx", "-y", "a b", "%x%"], detached: true });
    expect(await resolve("./missing", undefined, { ...options, platform: "darwin" })).toStrictEqual({ cmd: ["./missing"], detached: false });
    expect(await resolve("x", [], { ...options, platform: "freebsd" })).toStrictEqual({ cmd: ["x"], detached: true });
  });

  it("A11: an omitted platform is the host's (process.platform), never the Windows rules", async () => {
    const result = await resolve("tool.cmd", ["a b"], { cwd: "/nowhere", env: { PATHEXT: ".CMD" } });
    expect(result).toStrictEqual({ cmd: ["tool.cmd", "a b"], detached: process.platform !== "darwin" });
  });

  it("A11: bad arguments reject with a TypeError naming the field, never throw", async () => {
    const call = (config: unknown, options: unknown) => (native.resolveStdioSpawnCommand as any)(config, options);
    const cases: [unknown, unknown, RegExp][] = [
      [null, { cwd: "/", env: {} }, /"config"/],
      [{}, { cwd: "/", env: {} }, /"command"/],
      [{ command: "x", args: "a" }, { cwd: "/", env: {} }, /"args"/],
      [{ command: "x", args: [1] }, { cwd: "/", env: {} }, /"args"/],
      [{ command: "x" }, undefined, /"options"/],
      [{ command: "x" }, { platform: 7 }, /"options.platform"/],
      [{ command: "x" }, { platform: "win32", env: {} }, /"options.cwd"/],
      [{ command: "x" }, { platform: "win32", cwd: "/" }, /"options.env"/],
    ];
    for (const [config, options, message] of cases) {
      let promise: Promise<unknown> | undefined;
      expect(() => (promise = call(config, options))).not.toThrow();
      await expect(promise).rejects.toThrow(TypeError);
      await expect(promise).rejects.toThrow(message);
    }
  });
});

describe("A12 resolveStdioSpawnCommand on win32", () => {
  it("A12: windowsHide = !(hostHasInheritableConsole ?? false), detached false", async () => {
    const dir = tree({ "tool.EXE": "" });
    const exe = join(dir, "tool.EXE");
    expect(await resolve("tool", ["x"], win(dir))).toStrictEqual({ cmd: [exe, "x"], windowsHide: true, detached: false });
    expect(await resolve("tool", [], win(dir, {}, { hostHasInheritableConsole: true }))).toStrictEqual({ cmd: [exe], windowsHide: false, detached: false });
    expect((await resolve("tool", [], win(dir, {}, { hostHasInheritableConsole: false }))).windowsHide).toBe(true);
  });

  it("A12 (1): PATHEXT is split on ;, trimmed, dot-prefixed, matched in any case; the default is .COM .EXE .BAT .CMD", async () => {
    const dir = tree({ "a.COM": "", "b.BAT": "", "c.ps1": "", "d.Js": "" });
    expect((await resolve("a", [], win(dir))).cmd).toEqual([join(dir, "a.COM")]);
    expect(await resolve("b", [], win(dir))).toEqual(viaCmd(`""${join(dir, "b.BAT")}""`));
    // Candidates carry PATHEXT's own spelling; the name's extension is compared in any case.
    expect((await resolve("c", [], win(dir, { PATHEXT: " ; ps1 ;;" }))).cmd).toEqual([join(dir, "c.ps1")]);
    expect((await resolve("d.Js", [], win(dir, { pathext: ".JS" }))).cmd).toEqual([join(dir, "d.Js")]);
    // With an extension only the name itself is looked for: not "c.ps1.EXE", not "c.ps1.ps1".
    expect((await resolve("./c.PS1", [], win(dir, { PATHEXT: ".ps1" }))).cmd).toEqual(["./c.PS1"]);
  });

  it("A12 (2): a command with / or \\ or absolute is the first existing candidate, relative to cwd; PATH is not searched", async () => {
    const dir = tree({ "bin/tool.EXE": "", "bin/tool.CMD": "@echo off", "path/other.EXE": "" });
    const env = { PATH: join(dir, "path") };
    expect((await resolve("./bin/tool", [], win(dir, env))).cmd).toEqual([join(dir, "bin/tool.EXE")]);
    expect((await resolve(join(dir, "bin/tool"), ["a"], win("/elsewhere", env))).cmd).toEqual([join(dir, "bin/tool.EXE"), "a"]);
    const cmdFirst = await resolve("bin/../bin/tool", [], win(dir, { ...env, PATHEXT: ".CMD;.EXE" }));
    expect(cmdFirst).toEqual(viaCmd(`""${join(dir, "bin/tool.CMD")}""`));
    // Not there: unresolved without an extension (cmd.exe runs it), as named with one.
    expect(await resolve("./other", ["x"], win(dir, env))).toEqual(viaCmd('""./other" x"'));
    expect(await resolve("./other.exe", ["x"], win(dir, env))).toEqual({ cmd: ["./other.exe", "x"], windowsHide: true, detached: false });
  });

  it("A12 (2): a bare name is searched in cwd, then the PATH entries, directories outer", async () => {
    const dir = tree({ "cwd/local.BAT": "@echo off", "p1/local.EXE": "", "p1/tool.CMD": "@echo off", "p2/tool.COM": "", "p2/only.EXE": "" });
    const env = { Path: `;${join(dir, "p1")};;${join(dir, "p2")};` };
    const cwd = join(dir, "cwd");
    // cwd's .BAT beats p1's .EXE; p1's .CMD beats p2's .COM although .COM comes first in PATHEXT.
    expect(await resolve("local", [], win(cwd, env))).toEqual(viaCmd(`""${join(cwd, "local.BAT")}""`));
    expect(await resolve("tool", [], win(cwd, env))).toEqual(viaCmd(`""${join(dir, "p1/tool.CMD")}""`));
    expect((await resolve("only", ["-v"], win(cwd, env))).cmd).toEqual([join(dir, "p2/only.EXE"), "-v"]);
    expect(await resolve("missing", [], win(cwd, env))).toEqual(viaCmd('""missing""'));
    expect((await resolve("missing.exe", [], win(cwd, env))).cmd).toEqual(["missing.exe"]);
  });

  it("A12: env names match exactly first, else in any case", async () => {
    const dir = tree({ "exact/tool.EXE": "", "mixed/tool.EXE": "", "lower/tool.EXE": "" });
    const at = (name: string) => join(dir, name);
    expect((await resolve("tool", [], win("/none", { Path: at("mixed"), PATH: at("exact") }))).cmd).toEqual([join(at("exact"), "tool.EXE")]);
    expect((await resolve("tool", [], win("/none", { path: at("lower"), Path: at("mixed") }))).cmd).toEqual([join(at("lower"), "tool.EXE")]);
    // An undefined value is unset, whatever its spelling.
    expect((await resolve("tool", [], win("/none", { PATH: undefined, Path: at("mixed") }))).cmd).toEqual([join(at("mixed"), "tool.EXE")]);
    expect((await resolve("x", [], win("/none", { comspec: "C:\\Windows\\System32\\cmd.exe" }))).cmd[0]).toBe("C:\\Windows\\System32\\cmd.exe");
    expect((await resolve("x", [], win("/none", { COMSPEC: "" }))).cmd[0]).toBe("cmd.exe");
  });

  it("A12 (3): an npm .cmd shim whose interpreter is node runs its script with node, then the args", async () => {
    const dir = tree({ "node_modules/.bin/tool.cmd": npmShim("..\\pkg\\bin/cli.js") });
    const target = join(dir, "node_modules/pkg/bin/cli.js");
    // Candidates take PATHEXT's spelling, and this disk is case-sensitive.
    const PATHEXT = ".EXE;.cmd";
    expect(await resolve("tool", ["--flag", "a b", "%x%"], win(dir, { PATH: join(dir, "node_modules/.bin"), PATHEXT }))).toStrictEqual({
      cmd: ["node", target, "--flag", "a b", "%x%"],
      windowsHide: true,
      detached: false,
    });
    expect((await resolve("node_modules/.bin/tool.cmd", [], win(dir))).cmd).toEqual(["node", target]);
    // The shim directory's own node.exe when there is one.
    writeFileSync(join(dir, "node_modules/.bin/node.exe"), "");
    expect((await resolve("./node_modules/.bin/tool", ["x"], win(dir, { PATHEXT }))).cmd).toEqual([join(dir, "node_modules/.bin/node.exe"), target, "x"]);
  });

  it("A12 (3): node is matched by basename, .exe dropped, in any case; a bare %dp0% is the shim's directory", async () => {
    for (const prog of ["NODE", "node.EXE", "/usr/local/bin/Node.exe"]) {
      const dir = tree({ "tool.cmd": npmShim("cli.js", prog) });
      expect((await resolve("./tool.cmd", [], win(dir))).cmd, prog).toEqual(["node", join(dir, "cli.js")]);
    }
    const dir = tree({ "tool.cmd": npmShim("").replace('"%dp0%\\"', '"%dp0%"') });
    expect((await resolve("./tool.cmd", ["a"], win(dir))).cmd).toEqual(["node", dir, "a"]);
  });

  it("A12 (3): npx, other interpreters, other batch files and a bare found-nowhere name go through cmd.exe", async () => {
    const dir = tree({
      "npx.cmd": npmShim("npx-cli.js"),
      "NPX.BAT": npmShim("npx-cli.js"),
      "bun.cmd": npmShim("cli.js", "bun"),
      "pct.cmd": npmShim("cli.js", "%dp0%\\node.exe"),
      "plain.cmd": "@echo off\r\necho hi\r\n",
      "noscript.cmd": npmShim("cli.js").replace(" %*", ""),
    });
    for (const name of ["npx.cmd", "NPX.BAT", "bun.cmd", "pct.cmd", "plain.cmd", "noscript.cmd"]) {
      expect(await resolve(`./${name}`, ["a"], win(dir)), name).toEqual(viaCmd(`""${join(dir, name)}" a"`));
    }
    // npx found by a bare name is still npx.
    expect(await resolve("npx", [], win(dir, { PATHEXT: ".cmd" }))).toEqual(viaCmd(`""${join(dir, "npx.cmd")}""`));
  });

  it("A12 (4): a resolved non-batch file is spawned directly with the args untouched", async () => {
    const dir = tree({ "server.EXE": "" });
    const args = ["", "a b", 'q"uote', "100%", "back\\", "line\nbreak"];
    expect(await resolve("server", args, win(dir))).toStrictEqual({ cmd: [join(dir, "server.EXE"), ...args], windowsHide: true, detached: false });
  });

  it("A12 (5): everything else runs as COMSPEC /d /e:ON /v:OFF /c with one quoted line, verbatim", async () => {
    const dir = tree({ "run.CMD": "@echo off" });
    const run = join(dir, "run.CMD");
    const comspec = "C:\\Windows\\system32\\cmd.exe";
    expect(await resolve("run", ["plain", "a b"], win(dir, { ComSpec: comspec }))).toStrictEqual(viaCmd(`""${run}" plain "a b""`, comspec));
    expect(await resolve("npx", ["-y", "@scope/server@1.2.3"], win(dir))).toStrictEqual(viaCmd('""npx" -y @scope/server@1.2.3"'));
  });

  it("A12 (5): quoting: safe characters bare; %, quotes, backslashes before quotes and trailing backslashes escaped; empty quoted", async () => {
    const line = async (args: string[], command = "npx") => (await resolve(command, args, win("/none"))).cmd[5];
    expect(await line(["azAZ09#$*+-./:?@\\_"])).toBe('""npx" azAZ09#$*+-./:?@\\_"');
    expect(await line(["", "a b", "a&b", "a^b", "a=b", "a,b", "(x)", "é"])).toBe('""npx" "" "a b" "a&b" "a^b" "a=b" "a,b" "(x)" "é""');
    expect(await line(["%PATH%"])).toBe('""npx" "%%cd:~,%PATH%%cd:~,%""');
    expect(await line(['say "hi"'])).toBe('""npx" "say ""hi""""');
    expect(await line(['a\\"b', 'a\\\\"b'])).toBe('""npx" "a\\\\""b" "a\\\\\\\\""b""');
    expect(await line(["dir\\", "a\\b c", "C:\\x\\y"])).toBe('""npx" "dir\\\\" "a\\b c" C:\\x\\y"');
    expect(await line([], "C:\\My Tools\\100%\\x")).toBe('""C:\\My Tools\\100%%cd:~,%\\x""');
    expect(await line(["x"], "C:\\tools\\")).toBe('""C:\\tools\\\\" x"');
  });

  it("A12 (5): NUL, CR or LF on a cmd.exe line rejects with an Error, the command checked first", async () => {
    for (const bad of ["a\0b", "a\rb", "a\nb"]) {
      const command = resolve(`np${bad}x`, [bad], win("/none"));
      await expect(command).rejects.toThrow(new Error("Windows batch MCP command cannot contain NUL, CR, or LF characters"));
      await expect(command).rejects.not.toBeInstanceOf(TypeError);
      await expect(resolve("npx", ["ok", bad], win("/none"))).rejects.toThrow(
        new Error("Windows batch MCP argument cannot contain NUL, CR, or LF characters"),
      );
    }
  });
});

/** A15's process shape over a Node child: the `kill` calls are recorded. */
function handle(child: ChildProcess) {
  const kills: unknown[] = [];
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return {
    exit,
    kills,
    proc: {
      pid: child.pid!,
      exited: exit.then(({ code }) => code ?? 1),
      kill(signal?: number | string) {
        kills.push(signal);
        child.kill(signal as NodeJS.Signals);
      },
    },
  };
}

/** A node child running `script`, answering "ready" once its handlers are set. */
async function child(script: string, detached = false) {
  const spawned = spawn(process.execPath, ["-e", `${script}; console.log("ready " + (globalThis.extra ?? "")); setInterval(() => {}, 1000)`], {
    detached,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const ready = await new Promise<string>((resolve, reject) => {
    let text = "";
    spawned.stdout!.on("data", (chunk) => {
      text += chunk;
      if (text.includes("\n")) resolve(text.trim().slice("ready ".length));
    });
    spawned.once("error", reject);
  });
  return { ...handle(spawned), extra: ready };
}

const ignoreTerm = "process.on('SIGTERM', () => {})";
const gone = (pid: number) => {
  const p = proc(pid);
  return p === null || p.state === "Z";
};
const elapsed = async (run: () => Promise<unknown>) => {
  const started = performance.now();
  await run();
  return performance.now() - started;
};

describe("A15 terminateStdioProcess", () => {
  it("A15: not detached: SIGTERM through proc.kill only, done once exited; process.kill is never used", async () => {
    const { proc, kills, exit } = await child("");
    const processKill = vi.spyOn(process, "kill");
    const took = await elapsed(() => native.terminateStdioProcess(proc, false, "linux"));
    expect(processKill).not.toHaveBeenCalled();
    expect(kills).toEqual(["SIGTERM"]);
    expect((await exit).signal).toBe("SIGTERM");
    expect(took).toBeLessThan(900);
  });

  it("A15: not detached and ignoring SIGTERM: SIGKILL through proc.kill after termGraceMs", async () => {
    const { proc, kills, exit } = await child(ignoreTerm);
    const processKill = vi.spyOn(process, "kill");
    const took = await elapsed(() => native.terminateStdioProcess(proc, false, "linux", 300));
    expect(processKill).not.toHaveBeenCalled();
    expect(kills).toEqual(["SIGTERM", "SIGKILL"]);
    expect((await exit).signal).toBe("SIGKILL");
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(800 + 500);
  });

  it("A15: detached: the whole process group is signalled, and SIGKILLed even after the leader exits", async () => {
    // The leader exits on SIGTERM; its grandchild ignores SIGTERM and outlives it but for SIGKILL.
    const leader = await child(
      `const g = require("node:child_process").spawn(process.execPath, ["-e", "${ignoreTerm}; setInterval(() => {}, 1000)"], { stdio: "ignore" }); globalThis.extra = g.pid`,
      true,
    );
    const grandchild = Number(leader.extra);
    expect(proc(grandchild)).not.toBeNull();
    cleanups.push(() => {
      if (!gone(grandchild)) process.kill(grandchild, "SIGKILL");
    });
    const took = await elapsed(() => native.terminateStdioProcess(leader.proc, true, "linux", 2000));
    expect(leader.kills).toEqual([]);
    expect((await leader.exit).signal).toBe("SIGTERM");
    expect(await waitFor(() => gone(grandchild), 2000)).toBe(true);
    expect(took).toBeLessThan(1500);
  });

  it("A15: detached and ignoring SIGTERM: the group gets SIGKILL after termGraceMs", async () => {
    const { proc, kills, exit } = await child(ignoreTerm, true);
    const took = await elapsed(() => native.terminateStdioProcess(proc, true, "linux", 300));
    expect(kills).toEqual([]);
    expect((await exit).signal).toBe("SIGKILL");
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(800 + 500);
  });

  it("A15: detached with an omitted platform signals the group (process.platform is not win32)", async () => {
    const { proc, kills, exit } = await child("", true);
    await native.terminateStdioProcess(proc, true);
    expect(kills).toEqual([]);
    expect((await exit).signal).toBe("SIGTERM");
  });

  it("A15: a group that is already gone (ESRCH) is done at once, without proc.kill", async () => {
    const spawned = spawn(process.execPath, ["-e", "0"], { detached: true, stdio: "ignore" });
    const { proc, kills, exit } = handle(spawned);
    await exit;
    expect(await waitFor(() => gone(proc.pid))).toBe(true);
    const took = await elapsed(() => native.terminateStdioProcess({ ...proc, exited: new Promise<number>(() => {}) }, true, "linux", 5000));
    expect(kills).toEqual([]);
    expect(took).toBeLessThan(500);
  });

  it("A15: a pid that names no group falls back to proc.kill; a detached process always gets SIGKILL", async () => {
    for (const pid of [Number.NaN, undefined, "123", 2.5]) {
      const kills: unknown[] = [];
      const proc = { pid, exited: Promise.resolve(0), kill: (signal?: unknown) => void kills.push(signal) };
      const took = await elapsed(() => native.terminateStdioProcess(proc as any, true, "linux", 1000));
      expect(kills, String(pid)).toEqual(["SIGTERM", "SIGKILL"]);
      expect(took).toBeLessThan(500);
    }
  });

  it("A15: win32 never signals a group: a detached process gets SIGTERM and SIGKILL through proc.kill", async () => {
    const { proc, kills, exit } = await child("");
    const processKill = vi.spyOn(process, "kill");
    const took = await elapsed(() => native.terminateStdioProcess(proc, true, "win32", 1000));
    expect(processKill).not.toHaveBeenCalled();
    expect(kills).toEqual(["SIGTERM", "SIGKILL"]);
    expect((await exit).signal).toBe("SIGTERM");
    // The leader exited in time: no 0.5 s wait after the SIGKILL.
    expect(took).toBeLessThan(900);
  });

  it("A15: a rejected exited counts as exited; a throwing kill is ignored", async () => {
    const kills: unknown[] = [];
    const exited = Promise.reject(new Error("spawn failed"));
    exited.catch(() => {});
    const proc = {
      pid: 424242,
      exited,
      kill: (signal?: unknown) => {
        kills.push(signal);
        throw new Error("ESRCH");
      },
    };
    await expect(native.terminateStdioProcess(proc, false, "linux")).resolves.toBeUndefined();
    expect(kills).toEqual(["SIGTERM"]);
  });

  it("A15: an exit that never comes: SIGKILL after termGraceMs (default 1000), then at most 0.5 s more", async () => {
    const kills: unknown[] = [];
    const proc = { pid: 424242, exited: new Promise<number>(() => {}), kill: (signal?: unknown) => void kills.push(signal) };
    const short = await elapsed(() => native.terminateStdioProcess(proc, false, "linux", 100));
    expect(kills.splice(0)).toEqual(["SIGTERM", "SIGKILL"]);
    expect(short).toBeGreaterThanOrEqual(590);
    expect(short).toBeLessThan(1100);
    const byDefault = await elapsed(() => native.terminateStdioProcess(proc, false));
    expect(kills).toEqual(["SIGTERM", "SIGKILL"]);
    expect(byDefault).toBeGreaterThanOrEqual(1490);
    expect(byDefault).toBeLessThan(2300);
  });

  it("A15: bad arguments reject with a TypeError, never throw", async () => {
    const call = (...args: unknown[]) => (native.terminateStdioProcess as any)(...args);
    const proc = { pid: 424242, exited: Promise.resolve(0), kill() {} };
    const cases: [unknown[], RegExp][] = [
      [[undefined, false], /"proc"/],
      [[{ pid: 1, exited: Promise.resolve(0) }, false], /"proc.kill"/],
      [[proc, false, 32], /"platform"/],
      [[proc, false, "linux", "1000"], /"termGraceMs"/],
    ];
    for (const [args, message] of cases) {
      let promise: Promise<unknown> | undefined;
      expect(() => (promise = call(...args))).not.toThrow();
      await expect(promise).rejects.toThrow(TypeError);
      await expect(promise).rejects.toThrow(message);
    }
  });
});
