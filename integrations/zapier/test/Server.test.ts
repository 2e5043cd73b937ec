/** The request and response middlewares of `Server`, on their own. */
import { describe, expect, it } from "vitest"
import type { Bundle, ZObject } from "zapier-platform-core"
import * as Server from "../src/Server.js"

const bundle = (authData: Record<string, string>) => ({ authData }) as unknown as Bundle
const z = {} as ZObject

describe("Server", () => {
  it("retryAfterSeconds reads delta-seconds and HTTP dates, and nothing else", () => {
    expect(Server.retryAfterSeconds("7")).toBe(7)
    expect(Server.retryAfterSeconds(" 30 ")).toBe(30)
    const now = Date.parse("2026-03-14T09:30:00Z")
    expect(Server.retryAfterSeconds("Sat, 14 Mar 2026 09:30:12 GMT", now)).toBe(12)
    expect(Server.retryAfterSeconds("Sat, 14 Mar 2026 09:29:00 GMT", now)).toBe(0)
    expect(Server.retryAfterSeconds("soon")).toBeUndefined()
    expect(Server.retryAfterSeconds(null)).toBeUndefined()
  })

  it("errorBody reads the server's and RFC 6749's error shapes", () => {
    expect(Server.errorBody({ content: `{"error":"INVALID_BODY","message":"userHash: is missing"}` })).toEqual({
      code: "INVALID_BODY",
      message: "userHash: is missing"
    })
    expect(Server.errorBody({ content: `{"error":"invalid_grant","error_description":"used"}` })).toEqual({
      code: "invalid_grant",
      message: "used"
    })
    expect(Server.errorBody({ content: `{"error":"NOT_FOUND"}` })).toEqual({ code: "NOT_FOUND" })
    expect(Server.errorBody({ content: "<html>" })).toBeUndefined()
  })

  it("the credential goes to the customer API of the connection's server only", () => {
    const apiKey = bundle({ baseUrl: "https://streaks.example.com/", apiKey: "svc_api_1" })
    const sent = Server.addCredential({ url: "https://streaks.example.com/v1/api/me" }, z, apiKey)
    expect(sent.headers).toEqual({ authorization: "Bearer svc_api_1" })
    for (const url of ["https://streaks.example.com/oauth/token", "https://elsewhere.example/v1/api/me"]) {
      expect(Server.addCredential({ url }, z, apiKey).headers).toBeUndefined()
    }
    const oauth = bundle({ baseUrl: "https://streaks.example.com", access_token: "svc_oat_1" })
    expect(Server.addCredential({ url: "https://streaks.example.com/v1/api/programs" }, z, oauth).headers).toEqual({
      authorization: "Bearer svc_oat_1"
    })
  })

  it("baseUrl takes the connection's field, else STREAKS_BASE_URL, else fails", () => {
    const saved = process.env.STREAKS_BASE_URL
    try {
      delete process.env.STREAKS_BASE_URL
      expect(() => Server.baseUrl(bundle({}))).toThrow(/Server URL/)
      process.env.STREAKS_BASE_URL = "https://env.example//"
      expect(Server.baseUrl(bundle({}))).toBe("https://env.example")
      expect(Server.apiUrl(bundle({ baseUrl: "https://field.example" }), "/me")).toBe("https://field.example/v1/api/me")
    } finally {
      if (saved === undefined) delete process.env.STREAKS_BASE_URL
      else process.env.STREAKS_BASE_URL = saved
    }
  })
})
