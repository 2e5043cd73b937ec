/**
 * The file of the bundle's V8 code cache, `dist/server.cjs.cache`: the SHA-256 of the bundle's bytes,
 * then V8's data. `scripts/bundle.ts` writes it and `bundleEntry.ts` reads it. V8 checks only the
 * source's length against its data: a cache left beside another build of the same length would run
 * that build's code (seen: the old version string from an edited bundle).
 */
import { createHash } from "node:crypto"

const digest = (source: Buffer): Buffer => createHash("sha256").update(source).digest()

/** The cache file for V8's `data`, made from the bundle's bytes `source`. */
export const encode = (source: Buffer, data: Buffer): Buffer => Buffer.concat([digest(source), data])

/** V8's data in cache file `file`, or undefined when it was made from other bytes than `source`. */
export const decode = (source: Buffer, file: Buffer): Buffer | undefined => {
  const made = digest(source)
  return file.subarray(0, made.length).equals(made) ? file.subarray(made.length) : undefined
}
