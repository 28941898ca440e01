// H10 on Bun: a transport keeps its connections alive across calls and replaces one the
// server closed while idle, as __test__/http.test.ts checks on Node.
import { expect, it } from "bun:test";
import { startHttpFixture } from "../fixtures/http-server";
import { cleanupsAfterEach, native, sleep } from "./support";

const cleanups = cleanupsAfterEach();

async function open() {
  const server = await startHttpFixture();
  cleanups.push(server.close);
  const t: any = await native.createHttpTransport({ type: "http", url: server.url });
  cleanups.push(() => t.close());
  return { server, t };
}

it("H10: calls in turn share one kept-alive connection", async () => {
  const { server, t } = await open();
  for (let i = 0; i < 20; i++) expect(await t.request("json/echo", { i })).toEqual({ params: { i } });
  expect(server.connections()).toBe(1);
});

it("H10: a connection the server closed while idle is replaced, and the call goes once", async () => {
  const { server, t } = await open();
  await t.request("json/echo", { n: 1 });
  server.closeIdle();
  await sleep(50);
  expect(await t.request("json/echo", { n: 2 })).toEqual({ params: { n: 2 } });
  expect(server.posted().map((m: any) => m.params.n)).toEqual([1, 2]);
  expect(server.connections()).toBe(2);
});
