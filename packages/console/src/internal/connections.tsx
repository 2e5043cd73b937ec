/**
 * Connections: the workspace's API keys ("Create API key", shown once with a copy button; "Revoke"
 * each) and the automation apps connected to it ("Disconnect" each).
 */
import { useState } from "preact/hooks"
import { del, id, post } from "./api.js"
import { dateTime, Empty, ErrorNotice, Loaded, ShownOnce, useAction, useResource } from "./ui.js"

export interface Workspace {
  readonly id: string
  readonly name: string
  readonly plan: string
  readonly role: string
}

interface ApiKey {
  readonly id: string
  readonly name: string
  readonly workspaceId: string
  readonly createdAt?: string
  readonly lastUsedAt?: string | null
}

interface App {
  readonly grantId: string
  readonly appName: string
  readonly clientId?: string | null
  readonly workspaceIds: ReadonlyArray<string>
  readonly createdAt: string
  readonly lastUsedAt?: string | null
}

const ApiKeys = (props: { readonly workspaces: ReadonlyArray<Workspace> }) => {
  const writable = props.workspaces.filter((w) => w.role === "owner")
  const [keys, reload] = useResource<{ apiKeys: ReadonlyArray<ApiKey> }>("/v1/api/api-keys")
  const [name, setName] = useState("")
  const [workspaceId, setWorkspaceId] = useState(writable[0]?.id ?? "")
  const [created, setCreated] = useState<{ name: string; key: string } | undefined>(undefined)
  const [revoked, setRevoked] = useState<string | undefined>(undefined)
  const create = useAction(() => post<{ id: string; key: string }>("/v1/api/api-keys", { name, workspaceId }))
  const revoke = useAction((keyId: string) => del(`/v1/api/api-keys/${id(keyId)}`))
  const nameOf = (wsId: string) => props.workspaces.find((w) => w.id === wsId)?.name ?? wsId
  return (
    <>
      <form
        aria-label="Create an API key"
        onSubmit={async (event) => {
          event.preventDefault()
          const answer = await create.act()
          if (answer !== undefined) {
            setCreated({ name, key: answer.value.key })
            setName("")
            reload()
          }
        }}
      >
        <div class="field">
          <label for="key-name">Key name</label>
          <input id="key-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required maxLength={200} />
        </div>
        {writable.length > 1
          ? (
            <div class="field">
              <label for="key-workspace">Workspace</label>
              <select id="key-workspace" value={workspaceId} onChange={(e) => setWorkspaceId(e.currentTarget.value)}>
                {writable.map((w) => <option key={w.id} value={w.id}>{w.name}</option>)}
              </select>
            </div>
          )
          : null}
        <button type="submit" disabled={create.busy || writable.length === 0}>Create API key</button>
        {writable.length === 0 ? <p class="hint">Only a workspace owner creates and revokes API keys.</p> : null}
        <ErrorNotice error={create.error} />
      </form>
      {created !== undefined ? <ShownOnce label={`API key "${created.name}"`} value={created.key} /> : null}
      <h3>Manage API keys</h3>
      <Loaded resource={keys} label="API keys">
        {(data) => {
          const list = data.apiKeys
          return list.length === 0 ? <Empty>No API key.</Empty> : (
            <ul class="cards">
              {list.map((key) => (
                <li key={key.id} class="card row spread">
                  <div>
                    <strong id={`key-${key.id}`}>{key.name}</strong>
                    <p class="hint">
                      {nameOf(key.workspaceId)} · created {dateTime(key.createdAt)}
                      {key.lastUsedAt !== undefined ? ` · last used ${dateTime(key.lastUsedAt)}` : ""}
                    </p>
                  </div>
                  <button
                    type="button"
                    class="danger"
                    aria-describedby={`key-${key.id}`}
                    disabled={revoke.busy}
                    onClick={async () => {
                      if ((await revoke.act(key.id)) !== undefined) {
                        setRevoked(key.name)
                        reload()
                      }
                    }}
                  >
                    Revoke
                  </button>
                </li>
              ))}
            </ul>
          )
        }}
      </Loaded>
      <ErrorNotice error={revoke.error} />
      <p role="status">{revoked !== undefined ? `Revoked "${revoked}": it no longer works.` : ""}</p>
    </>
  )
}

const ConnectedApps = (props: { readonly workspaces: ReadonlyArray<Workspace> }) => {
  const [apps, reload] = useResource<{ apps: ReadonlyArray<App> }>("/v1/api/connected-apps")
  const [gone, setGone] = useState<string | undefined>(undefined)
  const disconnect = useAction((grantId: string) => del(`/v1/api/connected-apps/${id(grantId)}`))
  const nameOf = (wsId: string) => props.workspaces.find((w) => w.id === wsId)?.name ?? wsId
  return (
    <>
      <Loaded resource={apps} label="connected apps">
        {(data) =>
          data.apps.length === 0 ? <Empty>No app is connected.</Empty> : (
            <ul class="cards">
              {data.apps.map((app) => (
                <li key={app.grantId} class="card row spread">
                  <div>
                    <strong id={`app-${app.grantId}`}>{app.appName}</strong>
                    <p class="hint">
                      {app.workspaceIds.map(nameOf).join(", ")} · connected {dateTime(app.createdAt)}
                      {app.lastUsedAt !== null && app.lastUsedAt !== undefined
                        ? ` · last used ${dateTime(app.lastUsedAt)}`
                        : ""}
                    </p>
                  </div>
                  <button
                    type="button"
                    class="danger"
                    aria-describedby={`app-${app.grantId}`}
                    disabled={disconnect.busy}
                    onClick={async () => {
                      if ((await disconnect.act(app.grantId)) !== undefined) {
                        setGone(app.appName)
                        reload()
                      }
                    }}
                  >
                    Disconnect
                  </button>
                </li>
              ))}
            </ul>
          )}
      </Loaded>
      <ErrorNotice error={disconnect.error} />
      <p role="status">{gone !== undefined ? `Disconnected "${gone}": its tokens and subscriptions are gone.` : ""}</p>
    </>
  )
}

export const Connections = (props: { readonly workspaces: ReadonlyArray<Workspace> }) => (
  <>
    <section aria-labelledby="keys-heading">
      <h2 id="keys-heading">API keys</h2>
      <ApiKeys workspaces={props.workspaces} />
    </section>
    <section aria-labelledby="apps-heading">
      <h2 id="apps-heading">Connected apps</h2>
      <ConnectedApps workspaces={props.workspaces} />
    </section>
  </>
)
