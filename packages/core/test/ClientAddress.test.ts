/**
 * Who a request comes from (docs/operations.md#behind-a-proxy): the TCP peer, unless it is a
 * trusted proxy; then the right-most untrusted hop of `Forwarded`, else `X-Forwarded-For`, and
 * the scheme that hop used.
 */
import { assert, describe, it } from "@effect/vitest"
import { ClientAddress } from "@streaks/core"
import { Either } from "effect"

const trust = (text: string) => Either.getOrThrow(ClientAddress.parseTrust(text))

const request = (r: Partial<ClientAddress.Request>): ClientAddress.Request => ({
  peer: "10.0.0.1",
  encrypted: false,
  forwarded: undefined,
  xForwardedFor: undefined,
  xForwardedProto: undefined,
  ...r
})

describe("ClientAddress", () => {
  it("parses IPs, CIDRs and loopback; refuses anything else", () => {
    const t = trust("loopback, 10.0.0.0/8, 2001:db8::/32, 192.0.2.7")
    for (const a of ["127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1", "10.200.0.1", "2001:db8::5", "192.0.2.7"]) {
      assert.isTrue(ClientAddress.isTrusted(t, a), a)
    }
    for (const a of ["11.0.0.1", "192.0.2.8", "2001:db9::1", "::2", "unknown", ""]) {
      assert.isFalse(ClientAddress.isTrusted(t, a), a)
    }
    for (const bad of ["localhost", "10.0.0.0/33", "::/129", "10.0.0.0/x", "1.2.3"]) {
      assert.isTrue(Either.isLeft(ClientAddress.parseTrust(bad)), bad)
    }
    assert.deepStrictEqual(trust("  ").ranges, [])
  })

  it("an untrusted peer is the client, whatever its headers say", () => {
    const r = request({ peer: "203.0.113.5", xForwardedFor: "1.1.1.1", forwarded: "for=2.2.2.2;proto=https" })
    assert.deepStrictEqual(ClientAddress.resolve(trust("10.0.0.0/8"), r), { address: "203.0.113.5", scheme: "http" })
    assert.deepStrictEqual(ClientAddress.resolve(ClientAddress.none, r), { address: "203.0.113.5", scheme: "http" })
  })

  it("from a trusted peer: the right-most untrusted hop of X-Forwarded-For, and X-Forwarded-Proto", () => {
    const t = trust("10.0.0.0/8")
    const r = request({ xForwardedFor: "198.51.100.9, 203.0.113.5, 10.0.0.2", xForwardedProto: "https" })
    assert.deepStrictEqual(ClientAddress.resolve(t, r), { address: "203.0.113.5", scheme: "https" })
    // A scheme per hop is aligned from the right: the client's own claim (left) is not the proxy's word.
    assert.strictEqual(
      ClientAddress.resolve(t, request({ xForwardedFor: "203.0.113.5", xForwardedProto: "https, http" })).scheme,
      "http"
    )
    // Every hop trusted: the left-most.
    assert.strictEqual(ClientAddress.resolve(t, request({ xForwardedFor: "10.1.1.1, 10.2.2.2" })).address, "10.1.1.1")
    // No header: the peer itself.
    assert.strictEqual(ClientAddress.resolve(t, request({})).address, "10.0.0.1")
  })

  it("Forwarded wins over X-Forwarded-For, with quoted IPv6 and ports, and its proto", () => {
    const t = trust("10.0.0.0/8")
    const r = request({
      forwarded: "for=198.51.100.1;proto=http, for=\"[2001:db8:cafe::17]:4711\";proto=https;by=10.0.0.1, for=10.0.0.3",
      xForwardedFor: "192.0.2.99"
    })
    assert.deepStrictEqual(ClientAddress.resolve(t, r), { address: "2001:db8:cafe::17", scheme: "https" })
    assert.strictEqual(
      ClientAddress.resolve(t, request({ forwarded: "For=\"192.0.2.60:8080\";Proto=https" })).address,
      "192.0.2.60"
    )
    // A hop that is not an address stops at the trusted proxy that wrote it.
    assert.strictEqual(
      ClientAddress.resolve(t, request({ forwarded: "for=unknown, for=10.0.0.4" })).address,
      "10.0.0.4"
    )
    assert.strictEqual(ClientAddress.resolve(t, request({ forwarded: "for=_hidden" })).address, "10.0.0.1")
  })

  it("a TLS connection to the process is https unless a trusted proxy says otherwise", () => {
    assert.strictEqual(ClientAddress.resolve(ClientAddress.none, request({ encrypted: true })).scheme, "https")
  })
})
