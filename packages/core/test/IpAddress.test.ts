import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import * as IpAddress from "../src/IpAddress.js"

const rangeOf = (text: string) => Option.getOrUndefined(IpAddress.classify(text))

describe("IpAddress", () => {
  it("IPv4: loopback, private, link-local, shared (CGNAT), multicast, unspecified and reserved ranges are not public", () => {
    const cases: ReadonlyArray<readonly [string, IpAddress.Range]> = [
      ["127.0.0.1", "loopback"],
      ["127.255.255.254", "loopback"],
      ["10.0.0.5", "private"],
      ["172.16.0.1", "private"],
      ["172.31.255.255", "private"],
      ["192.168.1.1", "private"],
      ["169.254.169.254", "link-local"],
      ["100.64.0.1", "shared"],
      ["100.127.255.255", "shared"],
      ["224.0.0.1", "multicast"],
      ["239.255.255.255", "multicast"],
      ["0.0.0.0", "unspecified"],
      ["0.1.2.3", "reserved"],
      ["255.255.255.255", "reserved"],
      ["240.0.0.1", "reserved"],
      ["192.0.2.10", "reserved"],
      ["198.18.0.1", "reserved"],
      ["8.8.8.8", "public"],
      ["172.32.0.1", "public"],
      ["172.15.255.255", "public"],
      ["100.128.0.1", "public"],
      ["100.63.255.255", "public"],
      ["169.253.0.1", "public"],
      ["93.184.216.34", "public"]
    ]
    for (const [text, range] of cases) assert.strictEqual(rangeOf(text), range, text)
  })

  it("IPv6: ::1, ::, fc00::/7, fe80::/10, ff00::/8 are not public; IPv4 carried in IPv6 is judged as that IPv4 address", () => {
    const cases: ReadonlyArray<readonly [string, IpAddress.Range]> = [
      ["::1", "loopback"],
      ["[::1]", "loopback"],
      ["0:0:0:0:0:0:0:1", "loopback"],
      ["::", "unspecified"],
      ["fc00::1", "private"],
      ["fd12:3456:789a::1", "private"],
      ["fe80::1", "link-local"],
      ["[fe80::1%25eth0]", "link-local"],
      ["fe80::1%eth0", "link-local"],
      ["febf::1", "link-local"],
      ["ff02::1", "multicast"],
      ["::ffff:127.0.0.1", "loopback"],
      ["::ffff:7f00:1", "loopback"],
      ["[::ffff:a9fe:a9fe]", "link-local"],
      ["::ffff:10.1.2.3", "private"],
      ["::127.0.0.1", "loopback"],
      ["64:ff9b::192.168.0.1", "private"],
      ["2002:c0a8:0101::1", "private"],
      ["2001:db8::1", "reserved"],
      ["2001::1", "reserved"],
      ["::ffff:8.8.8.8", "public"],
      ["2606:4700:4700::1111", "public"],
      ["2a00:1450:4001:81c::200e", "public"]
    ]
    for (const [text, range] of cases) assert.strictEqual(rangeOf(text), range, text)
  })

  it("host names and malformed addresses are not addresses (None); isPublic is false for them", () => {
    for (
      const text of ["example.com", "localhost", "1.2.3.256", "1::2::3", "12345::", "1:2:3:4:5:6:7:8:9", "", "::g"]
    ) {
      assert.isUndefined(rangeOf(text), text)
      assert.isFalse(IpAddress.isPublic(text), text)
    }
    assert.isTrue(IpAddress.isPublic("8.8.8.8"))
  })

  it("the host of every spelling of loopback that a URL accepts is classified loopback", () => {
    for (
      const url of [
        "https://127.0.0.1",
        "https://2130706433",
        "https://0x7f.1",
        "https://0177.0.0.1",
        "https://127.1",
        "https://[::1]",
        "https://[0:0::1]",
        "https://[::ffff:127.0.0.1]"
      ]
    ) {
      assert.strictEqual(rangeOf(new URL(url).hostname), "loopback", url)
    }
  })
})
