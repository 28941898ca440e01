// The process table and this process's resources, read from /proc (Linux), for the fault
// and resource tests (issue 8).
import { readdirSync, readFileSync } from "node:fs";

export interface Proc {
  pid: number;
  ppid: number;
  /** R, S, D, T (stopped), Z (zombie), … */
  state: string;
  /** Clock ticks after boot: with the pid, it names one process even if the pid is reused. */
  start: string;
  cmdline: string;
}

const read = (path: string): string | null => {
  try {
    return readFileSync(path, "latin1");
  } catch {
    return null;
  }
};

export function proc(pid: number): Proc | null {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // The command name is in parentheses and may itself hold spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { pid, ppid: Number(fields[1]), state: fields[0], start: fields[19], cmdline: (read(`/proc/${pid}/cmdline`) ?? "").split("\0").join(" ").trim() };
}

const pids = () => readdirSync("/proc").filter((name) => /^\d+$/.test(name)).map(Number);

/**
 * Live processes that carry `mark` in their arguments or their environment. The
 * environment is inherited, so it also finds grandchildren that were not given the
 * argument. (A zombie has neither any more: see `stillThere` and `zombieChildren`.)
 */
export function marked(mark: string): Proc[] {
  return pids().flatMap((pid) => {
    const text = `${read(`/proc/${pid}/cmdline`) ?? ""}\0${read(`/proc/${pid}/environ`) ?? ""}`;
    if (!text.includes(mark) || pid === process.pid) return [];
    const p = proc(pid);
    return p ? [p] : [];
  });
}

/** Those of `seen` that still exist (alive, stopped or zombie), matched on pid and start time. */
export function stillThere(seen: Iterable<Proc>): Proc[] {
  return [...seen].flatMap((old) => {
    const now = proc(old.pid);
    return now && now.start === old.start ? [now] : [];
  });
}

/** Zombies whose parent is `parent`: children nobody reaped. */
export function zombieChildren(parent = process.pid): Proc[] {
  return pids().flatMap((pid) => {
    const p = proc(pid);
    return p && p.ppid === parent && p.state === "Z" ? [p] : [];
  });
}

export const fdCount = () => readdirSync("/proc/self/fd").length;

export function threadCount(): number {
  return Number(/^Threads:\s+(\d+)/m.exec(readFileSync("/proc/self/status", "utf8"))![1]);
}

export const rssBytes = () => process.memoryUsage().rss;

export const mib = (bytes: number) => Math.round((bytes / (1 << 20)) * 10) / 10;

/** Whether process `pid` still exists (a zombie counts). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
