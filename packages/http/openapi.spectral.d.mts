// Types of `openapi.spectral.mjs`: a Spectral ruleset definition.
declare const ruleset: Readonly<Record<string, unknown>>
export default ruleset
