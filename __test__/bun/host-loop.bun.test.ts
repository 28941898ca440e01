// Under Bun, a stdio server's stdout is read by Bun's own stream reader while the transport
// is busy (and shortly after), and only watched from a runtime thread while it is idle.
// What must hold whichever reads: a finished script exits with transports open (S8, its
// servers stop), an idle transport still hears its server, answers stay in order, and the
// loop's polling for quick answers stops while an answer is slow.
import { expect, test } from "bun:test";
import { fileURLToPath } from "node:url";
import { issueFromContinuations } from "../fixtures/continuation-chains";
import { alive, cleanupsAfterEach, native, sleep, waitFor } from "./support";

const cleanups = cleanupsAfterEach();
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
const server = fixture("stdio-server.mjs");

async function open() {
  const t: any = await native.createStdioTransport({ command: process.execPath, args: [server] });
  cleanups.push(() => t.close());
  return t;
}

test("S8: a finished Bun script exits with a transport still open, and its servers stop", async () => {
  const started = Date.now();
  const proc = Bun.spawn([process.execPath, fixture("exit-host.mjs"), "exit"], { stdout: "pipe", stderr: "inherit" });
  const code = await proc.exited;
  const { server: serverPid, grandchild } = JSON.parse((await new Response(proc.stdout).text()).trim());
  expect(code).toBe(0);
  expect(Date.now() - started).toBeLessThan(5000);
  expect(await waitFor(() => !alive(serverPid) && !alive(grandchild), 5000)).toBe(true);
});

test("T2: an idle transport still gets the notifications its server sends later", async () => {
  const t = await open();
  const seen: string[] = [];
  t.onNotification = (_method: string, params: any) => seen.push(params.data);
  await t.request("tools/call", { name: "notify_later", arguments: { ms: 300, count: 3 } });
  // Idle for longer than the stream is kept: the runtime watches the pipe meanwhile.
  expect(await waitFor(() => seen.length === 3, 3000)).toBe(true);
  expect(seen).toEqual(["later0", "later1", "later2"]);
  await sleep(150);
  const again = await t.request("tools/call", { name: "echo", arguments: { text: "after idle" } });
  expect(again.content[0].text).toBe("after idle");
});

test("the loop polls only briefly for an answer: a call pending on a slow server costs no CPU", async () => {
  const t = await open();
  // Quick answers first, so polling for the next one is on.
  for (let i = 0; i < 50; i++) await t.request("tools/call", { name: "echo", arguments: { text: "warm" } });
  const before = process.cpuUsage();
  await t.request("tools/call", { name: "slow", arguments: { ms: 400 } });
  const used = process.cpuUsage(before);
  // A loop that kept polling would burn the whole 400 ms.
  expect((used.user + used.system) / 1000).toBeLessThan(150);
});

test("T3: 2000 calls in flight answer in order while a timer still runs between them", async () => {
  const t = await open();
  const order: string[] = [];
  setTimeout(() => order.push("timer"), 0);
  await Promise.all(
    Array.from({ length: 2000 }, (_, i) =>
      t.request("tools/call", { name: "echo", arguments: { text: String(i) } }).then((r: any) => order.push(r.content[0].text)),
    ),
  );
  expect(order.filter((x) => x !== "timer")).toEqual(Array.from({ length: 2000 }, (_, i) => String(i)));
  expect(order.indexOf("timer")).toBeGreaterThan(-1);
});

test("S7: requests and notifications issued from the continuations of answers (held, then written together) leave in issue order", async () => {
  const { issued, seen, wrong } = await issueFromContinuations(await open());
  expect(wrong).toEqual([]);
  expect(seen).toEqual(issued);
});

test("S2: long lines (received off the JS thread) arrive whole, interleaved with short answers", async () => {
  const t = await open();
  const calls = [20_000_000, 0, 3_000_000, 0, 300_000, 150_000, 0].map((bytes, i) =>
    bytes
      ? t.request("tools/call", { name: "big", arguments: { bytes } }).then((r: any) => r.content[0].text.length)
      : t.request("tools/call", { name: "echo", arguments: { text: `short${i}` } }).then((r: any) => r.content[0].text),
  );
  expect(await Promise.all(calls)).toEqual([20_000_000, "short1", 3_000_000, "short3", 300_000, 150_000, "short6"]);
  const seen: string[] = [];
  t.onNotification = (_m: string, params: any) => seen.push(params.pad ? `huge:${params.pad.length}` : "other");
  const after = await t.request("tools/call", { name: "huge_line_then_ok", arguments: { bytes: 2_000_000 } });
  expect(after.content[0].text).toBe("still alive");
  expect(seen).toEqual(["huge:2000000"]);
});

test("S4: a server that exits while the transport is idle is noticed (onClose)", async () => {
  const t = await open();
  const closed = new Promise<void>((resolve) => (t.onClose = resolve));
  await t.request("tools/call", { name: "echo", arguments: { text: "x" } });
  await sleep(150);
  process.kill(t.pid, "SIGKILL");
  await closed;
  expect(t.connected).toBe(false);
});
