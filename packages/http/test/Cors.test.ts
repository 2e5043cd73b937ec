import { assert, describe, it } from "@effect/vitest"
import * as Cors from "../src/Cors.js"

const allowed = ["https://app.example.com", "http://localhost:3000", "https://*.example.org", "https://shop.test:8443"]

describe("Cors.isAllowedOrigin", () => {
  it("matches exact scheme://host[:port] origins", () => {
    assert.isTrue(Cors.isAllowedOrigin("https://app.example.com", allowed))
    assert.isTrue(Cors.isAllowedOrigin("http://localhost:3000", allowed))
    assert.isTrue(Cors.isAllowedOrigin("https://shop.test:8443", allowed))
  })

  it("scheme, host and port must all match", () => {
    assert.isFalse(Cors.isAllowedOrigin("http://app.example.com", allowed))
    assert.isFalse(Cors.isAllowedOrigin("https://app.example.com:8443", allowed))
    assert.isFalse(Cors.isAllowedOrigin("http://localhost:3001", allowed))
    assert.isFalse(Cors.isAllowedOrigin("http://localhost", allowed))
    assert.isFalse(Cors.isAllowedOrigin("https://shop.test", allowed))
    assert.isFalse(Cors.isAllowedOrigin("https://other.example.com", allowed))
  })

  it("default ports are normalised on both sides, host case is ignored", () => {
    assert.isTrue(Cors.isAllowedOrigin("https://app.example.com:443", allowed))
    assert.isTrue(Cors.isAllowedOrigin("https://APP.Example.com", allowed))
    assert.isTrue(Cors.isAllowedOrigin("http://a.test", ["http://a.test:80"]))
    assert.isTrue(Cors.isAllowedOrigin("http://a.test:80", ["http://a.test"]))
    assert.isFalse(Cors.isAllowedOrigin("https://a.test:80", ["http://a.test"]))
  })

  it("https://*.example.org matches subdomains at any depth over https", () => {
    assert.isTrue(Cors.isAllowedOrigin("https://a.example.org", allowed))
    assert.isTrue(Cors.isAllowedOrigin("https://a.b.c.example.org", allowed))
    assert.isTrue(Cors.isAllowedOrigin("https://a.example.org:443", allowed))
  })

  it("the wildcard matches neither the apex, nor look-alikes, nor http, nor another port", () => {
    assert.isFalse(Cors.isAllowedOrigin("https://example.org", allowed))
    assert.isFalse(Cors.isAllowedOrigin("https://evil-example.org", allowed))
    assert.isFalse(Cors.isAllowedOrigin("https://aexample.org", allowed))
    assert.isFalse(Cors.isAllowedOrigin("https://example.org.evil.com", allowed))
    assert.isFalse(Cors.isAllowedOrigin("http://a.example.org", allowed))
    assert.isFalse(Cors.isAllowedOrigin("https://a.example.org:8443", allowed))
    assert.isFalse(Cors.isAllowedOrigin("https://*.example.org", allowed))
  })

  it("an http wildcard or a bare * allows nothing", () => {
    assert.isFalse(Cors.isAllowedOrigin("http://a.example.net", ["http://*.example.net"]))
    assert.isFalse(Cors.isAllowedOrigin("https://a.example.net", ["*"]))
    assert.isFalse(Cors.isAllowedOrigin("https://a.example.net", ["https://*"]))
  })

  it("strings that are not plain http(s) origins never match", () => {
    for (
      const origin of [
        "null",
        "",
        "app.example.com",
        "https://app.example.com/path",
        "https://app.example.com?x=1",
        "https://user@app.example.com",
        "file://app.example.com",
        "chrome-extension://abc"
      ]
    ) {
      assert.isFalse(Cors.isAllowedOrigin(origin, [...allowed, "null", "file://app.example.com"]), origin)
    }
  })

  it("internationalised hosts compare in punycode", () => {
    assert.isTrue(Cors.isAllowedOrigin("https://xn--bcher-kva.de", ["https://bücher.de"]))
    assert.isTrue(Cors.isAllowedOrigin("https://shop.xn--bcher-kva.de", ["https://*.bücher.de"]))
  })

  it("an empty list allows nothing; a compiled list answers like isAllowedOrigin", () => {
    assert.isFalse(Cors.isAllowedOrigin("https://app.example.com", []))
    const matches = Cors.compile(allowed)
    assert.isTrue(matches("https://x.example.org"))
    assert.isFalse(matches("https://example.org"))
  })

  it("normalizeOrigin makes the default port explicit", () => {
    assert.strictEqual(Cors.normalizeOrigin("HTTPS://App.Example.com"), "https://app.example.com:443")
    assert.strictEqual(Cors.normalizeOrigin("http://localhost:3000"), "http://localhost:3000")
    assert.isUndefined(Cors.normalizeOrigin("null"))
  })
})

describe("Cors headers", () => {
  it("the preflight answers any origin with methods, headers and max-age", () => {
    const h = Cors.preflightHeaders("https://anything.invalid")
    assert.strictEqual(h["access-control-allow-origin"], "https://anything.invalid")
    assert.strictEqual(h["access-control-allow-methods"], "POST, GET, OPTIONS")
    assert.strictEqual(h["access-control-allow-headers"], "content-type, x-streak-server-token, x-streak-identity")
    assert.isTrue(Number(h["access-control-max-age"]) > 0)
    assert.strictEqual(h["vary"], "Origin")
    assert.strictEqual(Cors.preflightHeaders(undefined)["access-control-allow-origin"], "*")
  })

  it("the preflight response is a 204 with those headers", () => {
    const res = Cors.preflightResponse("https://x.test")
    assert.strictEqual(res.status, 204)
    assert.strictEqual(res.headers["access-control-allow-origin"], "https://x.test")
  })

  it("an actual response carries Allow-Origin and Vary only for an allowed origin", () => {
    assert.deepInclude(Cors.actualHeaders("https://a.example.org", allowed), {
      "access-control-allow-origin": "https://a.example.org",
      "vary": "Origin"
    })
    assert.deepStrictEqual(Cors.actualHeaders("https://evil.test", allowed), {})
    assert.deepStrictEqual(Cors.actualHeaders(undefined, allowed), {})
  })
})
