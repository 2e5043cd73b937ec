/**
 * A 429 of the reference server as Zapier's `ThrottledError`, with the server's `Retry-After`
 * seconds as its delay: past the failed-authentication limit of the client's address, every
 * customer call from it is refused for a while, a valid key's included. Its own server, so its
 * low limit touches no other test.
 */
import { afterAll, beforeAll, expect, it } from "vitest"
import zapier from "zapier-platform-core"
import App from "../src/index.js"
import * as ReferenceServer from "./support/ReferenceServer.js"

const appTester = zapier.createAppTester(App)
let server: ReferenceServer.Running
let customer: ReferenceServer.Customer

beforeAll(async () => {
  server = await ReferenceServer.start({ STREAKS_RATE_LIMIT_AUTH_FAILURES: "2" })
  customer = await ReferenceServer.provision(server.url)
})

afterAll(() => server?.dispose())

it("past the limit, the action fails with a ThrottledError carrying Retry-After", async () => {
  const wrong = { baseUrl: server.url, apiKey: "svc_api_wrong" }
  for (let i = 0; i < 2; i++) {
    await expect(appTester(App.authentication.test, { authData: wrong })).rejects.toMatchObject({
      name: "ExpiredAuthError"
    })
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
