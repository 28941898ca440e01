// Issue 18: a flood of server messages is delivered in turns of a few hundred, so the host's
// timers and I/O run in between (order kept, T3); nothing here is timed.
import { describe, expect, it } from "vitest";
import { closingAfterEach } from "./helpers";

const { connect } = closingAfterEach();

describe("delivery in turns", () => {
  it("a timer set at the first of 5000 queued notifications fires before the last; all arrive in order, then the answer", async () => {
    const t = await connect();
    const seen: string[] = [];
    let seenWhenTimerFired = -1;
    t.onNotification = (_method, params: any) => {
      if (seen.length === 0) setTimeout(() => (seenWhenTimerFired = seen.length), 0);
      seen.push(params.data);
    };
    const answered = t.request<any>("tools/call", { name: "notify_then_answer", arguments: { count: 5000 } });
    // Keep the JS thread busy while the server writes, so the whole flood is queued at once.
    const until = Date.now() + 400;
    while (Date.now() < until);
    const result = await answered;
    expect(result.content[0].text).toBe("after notifications");
    expect(seen).toEqual(Array.from({ length: 5000 }, (_, i) => `n${i}`));
    expect(seenWhenTimerFired).toBeGreaterThan(0);
    expect(seenWhenTimerFired).toBeLessThan(5000);
  });
});

describe("callbacks reassigned during a flood (T1)", () => {
  it("a callback assigned by the notification callback itself takes the very next notification; unassigned, none", async () => {
    const t = await connect();
    const first: string[] = [];
    const second: string[] = [];
    const takeSecond = (_method: string, params: any) => {
      second.push(params.data);
      if (second.length === 100) t.onNotification = undefined;
    };
    t.onNotification = (_method, params: any) => {
      first.push(params.data);
      if (first.length === 10) t.onNotification = takeSecond;
    };
    const answered = t.request<any>("tools/call", { name: "notify_then_answer", arguments: { count: 300 } });
    // All 300 arrive before JS runs again, so they are delivered as one run.
    const until = Date.now() + 200;
    while (Date.now() < until);
    await answered;
    expect(first).toEqual(Array.from({ length: 10 }, (_, i) => `n${i}`));
    expect(second).toEqual(Array.from({ length: 100 }, (_, i) => `n${i + 10}`));
    expect(t.onNotification).toBeUndefined();
  });
});
