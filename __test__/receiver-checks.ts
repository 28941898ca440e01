// T2: the checks of `request`'s receiver, shared by the Vitest and `bun test` suites (Bun,
// unlike Node, calls a method with any receiver, so the addon's own check is all there is).
type Native = typeof import("../index.js");
type Transport = InstanceType<Native["StdioTransport"]>;

/**
 * `t` is a connected stdio transport whose server answers `method` by echoing the params;
 * `echoed` takes them out of the result.
 */
export async function checkRequestReceivers(
  native: Native,
  t: Transport,
  method: string,
  echoed: (result: any) => unknown,
  expect: (value: unknown) => any,
) {
  const request = native.StdioTransport.prototype.request;
  const http = new native.HttpTransport({ type: "http", url: "http://127.0.0.1:9/mcp" });
  // Admitted by its own class first: the tag of one class must not open another's.
  await expect(http.request("ping")).rejects.toThrow("Transport not connected");
  for (const receiver of [http, Object.create(native.StdioTransport.prototype), undefined, {}]) {
    expect(() => request.call(receiver, "ping")).toThrow();
  }
  expect(() => native.HttpTransport.prototype.request.call(t, "ping")).toThrow();
  // A setter called from params' toJSON takes effect, and the request goes out.
  const onClose = () => {};
  const reentrant = {
    toJSON() {
      t.onClose = onClose;
      return { set: true };
    },
  };
  expect(echoed(await t.request(method, reentrant))).toEqual({ set: true });
  expect(t.onClose).toBe(onClose);
  expect(echoed(await t.request(method, { toJSON: () => ({ connected: t.connected }) }))).toEqual({ connected: true });
  expect(echoed(await request.call(t, method, { a: 1 }))).toEqual({ a: 1 });
}
