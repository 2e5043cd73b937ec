/**
 * A 429 of the reference server as Zapier's `ThrottledError`, with the server's `Retry-After`
 * seconds as its delay: past the per-credential limit, the key's calls are refused for a while.
 * Its own server, so its low limit touches no other test.
 */
import { afterAll, beforeAll, expect, it } from "vitest"
import zapier from "zapier-platform-core"
import App from "../src/index.js"
import * as ReferenceServer from "./support/ReferenceServer.js"

const appTester = zapier.createAppTester(App)
let server: ReferenceServer.Running
let customer: ReferenceServer.Customer

beforeAll(async () => {
  server = await ReferenceServer.start({ STREAKS_RATE_LIMIT_CREDENTIAL: "1" })
  customer = await ReferenceServer.provision(server.url)
})

afterAll(() => server?.dispose())

it("past the limit, the action fails with a ThrottledError carrying Retry-After", async () => {
  // One request a second, a burst of two: the key's bucket is empty after these.
  for (let i = 0; i < 4; i++) {
    await ReferenceServer.call(server.url, "/v1/api/me", { headers: { authorization: `Bearer ${customer.apiKey}` } })
  }
  const error = await appTester((App.creates as Record<string, any>).recordMemberAction.operation.perform, {
    authData: { baseUrl: server.url, apiKey: customer.apiKey },
    inputData: { programId: customer.programId, userHash: "throttled" }
  }).then(() => undefined, (e: Error) => e)
  expect(error?.name).toBe("ThrottledError")
  const { message, delay } = JSON.parse(error!.message)
  expect(message).toContain("RATE_LIMITED")
  const direct = await ReferenceServer.call(server.url, "/v1/api/me", {
    headers: { authorization: `Bearer ${customer.apiKey}` }
  })
  expect(direct.status).toBe(429)
  const retryAfter = Number(direct.headers.get("retry-after"))
  expect(retryAfter).toBeGreaterThan(0)
  expect(delay).toBeGreaterThan(0)
  expect(Math.abs(delay - retryAfter)).toBeLessThanOrEqual(1)
})
