/**
 * The console (docs/console.md): the web dashboard of a Streaks server, served at `/console` to a
 * signed-in user. It reads and writes only through the public HTTP API with the user's session.
 */
import { render } from "preact"
import { useEffect, useRef } from "preact/hooks"
import { AuditPage, UsagePage } from "./internal/account.js"
import { Connections, type Workspace } from "./internal/connections.js"
import { Members } from "./internal/members.js"
import { type Policy, PolicyEditor } from "./internal/policy.js"
import { Proof } from "./internal/proof.js"
import { Events, Insights, Overview, programPath } from "./internal/reports.js"
import { base, useLocation } from "./internal/router.js"
import { Empty, Link, Loaded, useResource } from "./internal/ui.js"
import { Webhooks } from "./internal/webhooks.js"

interface Me {
  readonly credential: { readonly kind: string; readonly email?: string }
  readonly workspaces: ReadonlyArray<Workspace>
}

interface Program {
  readonly id: string
  readonly name: string
  readonly eventKey: string
  readonly status: "test" | "live"
  readonly mode: string
  readonly policy: Policy
  readonly project: { readonly id: string; readonly name: string; readonly siteKey: string }
}

const sections = [
  ["overview", "Overview"],
  ["events", "Events"],
  ["insights", "Insights"],
  ["policy", "Policy"],
  ["members", "Members"],
  ["webhooks", "Webhooks"],
  ["connections", "Connections"],
  ["proof", "Proof"]
] as const

/** The page's main heading, focused after each navigation so the reading starts there. */
const Heading = (props: { readonly children: string }) => {
  const ref = useRef<HTMLHeadingElement>(null)
  useEffect(() => {
    document.title = `${props.children} · Streaks console`
    if (document.activeElement !== document.body && document.activeElement !== null) ref.current?.focus()
  }, [props.children])
  return <h1 ref={ref} tabIndex={-1}>{props.children}</h1>
}

const ProgramList = (props: { readonly programs: ReadonlyArray<Program> }) =>
  props.programs.length === 0
    ? <Empty>No program yet. Your operator creates programs (see the README's walkthrough).</Empty>
    : (
      <div class="table" tabIndex={0} role="region" aria-label="Programs">
        <table>
          <thead>
            <tr>
              <th scope="col">Program</th>
              <th scope="col">Project</th>
              <th scope="col">Event key</th>
              <th scope="col">Mode</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {props.programs.map((p) => (
              <tr key={p.id}>
                <td>
                  <Link href={programPath(p.id, "overview")}>{p.name}</Link>
                </td>
                <td>{p.project.name}</td>
                <td>
                  <code>{p.eventKey}</code>
                </td>
                <td>{p.mode}</td>
                <td>
                  <span class={`badge ${p.status}`}>{p.status === "live" ? "Live" : "Test"}</span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    )

const ProgramPage = (
  props: {
    readonly program: Program
    readonly section: string
    readonly me: Me
    readonly reloadPrograms: () => void
  }
) => {
  const { program, section } = props
  const label = sections.find(([s]) => s === section)?.[1] ?? "Overview"
  // The server refuses a viewer's writes; the console says so up front instead of offering them.
  const canWrite = props.me.workspaces.some((w) => w.role !== "viewer")
  return (
    <>
      <Heading>{`${program.name}: ${label}`}</Heading>
      <p class="hint">
        {program.project.name} · <code>{program.eventKey}</code> · {program.mode} ·{" "}
        <span class={`badge ${program.status}`}>{program.status === "live" ? "Live" : "Test"}</span>
      </p>
      <nav aria-label="Program sections" class="tabs">
        <ul>
          {sections.map(([s, name]) => (
            <li key={s}>
              <Link href={programPath(program.id, s)} current={s === section}>{name}</Link>
            </li>
          ))}
        </ul>
      </nav>
      <section class="panel" aria-label={label}>
        {section === "events"
          ? <Events programId={program.id} />
          : section === "insights"
          ? <Insights programId={program.id} />
          : section === "policy"
          ? (
            <PolicyEditor
              key={program.id}
              programId={program.id}
              policy={program.policy}
              canWrite={canWrite}
              onSaved={props.reloadPrograms}
            />
          )
          : section === "members"
          ? <Members programId={program.id} canWrite={canWrite} />
          : section === "webhooks"
          ? <Webhooks programId={program.id} canWrite={canWrite} />
          : section === "connections"
          ? <Connections workspaces={props.me.workspaces} />
          : section === "proof"
          ? <Proof programId={program.id} canWrite={canWrite} />
          : <Overview programId={program.id} />}
      </section>
    </>
  )
}

const csrfToken = () => document.querySelector("meta[name=\"csrf-token\"]")?.getAttribute("content") ?? ""

const App = () => {
  const { path } = useLocation()
  const [me] = useResource<Me>("/v1/api/me")
  const [programs, reloadPrograms] = useResource<ReadonlyArray<Program>>("/v1/api/programs")
  const parts = path.slice(base.length).split("/").filter((p) => p !== "").map(decodeURIComponent)
  const page = parts[0] ?? "programs"
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <p class="brand">
          <Link href={base}>Streaks console</Link>
        </p>
        <nav aria-label="Console">
          <ul>
            <li>
              <Link href={base} current={page === "programs"}>Programs</Link>
            </li>
            <li>
              <Link href={`${base}/usage`} current={page === "usage"}>Usage</Link>
            </li>
            <li>
              <Link href={`${base}/audit`} current={page === "audit"}>Audit</Link>
            </li>
          </ul>
        </nav>
        <form method="post" action="/sign-out" class="account">
          {me.state === "ready" && me.data.credential.email !== undefined
            ? <span class="hint">{me.data.credential.email}</span>
            : null}
          <input type="hidden" name="csrfToken" value={csrfToken()} />
          <button type="submit">Sign out</button>
        </form>
      </header>
      <main id="main" tabIndex={-1}>
        <Loaded resource={me} label="your account">
          {(account) =>
            page === "usage"
              ? (
                <>
                  <Heading>Usage</Heading>
                  <UsagePage workspaces={account.workspaces} />
                </>
              )
              : page === "audit"
              ? (
                <>
                  <Heading>Audit</Heading>
                  <AuditPage />
                </>
              )
              : (
                <Loaded resource={programs} label="programs">
                  {(list) => {
                    if (page === "programs" && parts[1] !== undefined) {
                      const program = list.find((p) => p.id === parts[1])
                      return program === undefined
                        ? (
                          <>
                            <Heading>Program not found</Heading>
                            <Empty>
                              No program of your workspaces has this id. <Link href={base}>Back to the programs</Link>
                            </Empty>
                          </>
                        )
                        : (
                          <ProgramPage
                            program={program}
                            section={parts[2] ?? "overview"}
                            me={account}
                            reloadPrograms={reloadPrograms}
                          />
                        )
                    }
                    return (
                      <>
                        <Heading>Programs</Heading>
                        <ProgramList programs={list} />
                      </>
                    )
                  }}
                </Loaded>
              )}
        </Loaded>
      </main>
    </>
  )
}

const root = document.getElementById("app")!
// The server's placeholder ("Loading the console…") gives way to the app.
root.textContent = ""
render(<App />, root)
