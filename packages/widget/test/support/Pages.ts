/**
 * The customer's pages for the browser tests: two HTTP servers on 127.0.0.1, each its own origin
 * (`allowed`, which the test project allows, and `other`, which it does not), serving the HTML
 * pages a test puts at a path.
 */
import { Context, Effect, Layer } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"

export class Pages extends Context.Tag("@streaks/widget/test/Pages")<Pages, {
  /** `http://127.0.0.1:port` of the origin the test project allows. */
  readonly allowed: string
  /** Another origin, which the project does not allow. */
  readonly other: string
  /** Serves `html` at `path` on both origins, with `headers` (e.g. a Content-Security-Policy). */
  readonly put: (path: string, html: string, headers?: Record<string, string>) => void
}>() {}

interface Served {
  readonly html: string
  readonly headers: Record<string, string>
}

const listen = (pages: Map<string, Served>) =>
  Effect.acquireRelease(
    Effect.async<Server>((resume) => {
      const server = createServer((req, res) => {
        const page = pages.get(new URL(req.url ?? "/", "http://x").pathname)
        if (page === undefined) return res.writeHead(404).end()
        res.writeHead(200, { "content-type": "text/html; charset=utf-8", ...page.headers }).end(page.html)
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`))

export const layer = Layer.scoped(
  Pages,
  Effect.gen(function*() {
    const pages = new Map<string, Served>()
    return {
      allowed: yield* listen(pages),
      other: yield* listen(pages),
      put: (path, html, headers = {}) => void pages.set(path, { html, headers })
    }
  })
)

/**
 * A page of lessons with `widgets` (HTML of `<streak-widget>` elements) after its main content,
 * `inside` within it, the module from `script`, and every `streak-state` event's detail collected
 * in `window.streakStates`.
 */
export const html = (options: { script: string; widgets?: string; inside?: string; style?: string }): string =>
  `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Lessons</title>
<style>body{margin:0;font:16px/1.5 Georgia,serif;color:#222;background:#f6f4ef}main{max-width:40rem;padding:24px 32px}${
    options.style ?? ""
  }</style>
</head>
<body>
<main>
<h1>Today's lesson</h1>
<p>Irregular verbs in the past tense: went, saw, took, came, gave. Read them aloud twice, then write one sentence with each.</p>
${options.inside ?? ""}
</main>
${options.widgets ?? ""}
<script>
window.streakStates = []
for (const el of document.querySelectorAll("streak-widget")) el.addEventListener("streak-state", (e) => window.streakStates.push(e.detail))
</script>
<script type="module" src="${options.script}"></script>
</body>
</html>`
