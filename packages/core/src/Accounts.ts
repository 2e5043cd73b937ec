/**
 * Accounts, the service: users and their workspace roles, invitations, passwords and sessions
 * (docs/accounts.md). Users, invites and sessions are `Catalog` records; only hashes of the
 * session and invite tokens and the argon2id hash of a password are stored. Time comes from `Clock`.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import * as Audit from "./Audit.js"
import { Invite, type Membership, Role, Session, User } from "./Domain.js"
import { Conflict, InvalidBody, NotFound, type StorageError, Unauthorized } from "./Errors.js"
import * as Ids from "./Ids.js"
import type { WorkspaceId } from "./Ids.js"
import { Passwords } from "./Passwords.js"
import * as PasswordRules from "./Passwords.js"
import { Catalog, CredentialStore, OAuthStore, SubscriptionStore, Transactor } from "./Ports.js"
import { generate, hashToken } from "./Tokens.js"

const minute = 60_000
const hour = 60 * minute

/** A session ends after this long without a request. */
export const idleMillis = 12 * hour
/** A session ends this long after sign-in, whatever the activity. */
export const maxMillis = 7 * 24 * hour
/** An invite link works this long, once. */
export const inviteMillis = 72 * hour
/** Failed sign-ins of one account allowed within `lockoutWindowMillis`; further attempts are refused. */
export const maxFailedSignIns = 5
export const lockoutWindowMillis = 15 * minute
/** `lastSeenAt` is written again at most this often (a request does not cost a write each time). */
const touchMillis = minute

export interface CreateUserInput {
  readonly email: string
  readonly name: string
  readonly workspaces: ReadonlyArray<{ readonly workspaceId: string; readonly role: string }>
  /** Without one, the user gets an invite link to set it. */
  readonly password?: string | undefined
}

export interface Created {
  readonly user: User
  /** The one-time invite token (shown once), when no password was given. */
  readonly inviteToken?: string | undefined
}

export interface SignedIn {
  /** The session's token, for the cookie: shown once, stored hashed. */
  readonly token: string
  readonly session: Session
  readonly user: User
}

export interface Current {
  readonly session: Session
  readonly user: User
}

const email = /^[^@\s]+@[^@\s]+$/

const invalid = (message: string) => new InvalidBody({ message })

/** Where `password` breaks the rules, or undefined when it is acceptable. */
export const passwordProblem = (password: string): string | undefined =>
  password.length < PasswordRules.minLength
    ? `password must be at least ${PasswordRules.minLength} characters`
    : password.length > PasswordRules.maxLength
    ? `password must be at most ${PasswordRules.maxLength} characters`
    : undefined

export class Accounts extends Context.Tag("@streaks/core/Accounts")<Accounts, {
  /** A new user (docs/accounts.md#users): InvalidBody, NotFound for an unknown workspace, Conflict for a taken e-mail. */
  readonly createUser: (
    input: CreateUserInput,
    by: Audit.By
  ) => Effect.Effect<Created, InvalidBody | NotFound | Conflict | StorageError>
  /** The user of an unused, unexpired invite token. */
  readonly invited: (token: string) => Effect.Effect<Option.Option<User>, StorageError>
  /** Sets the password of an invited user and uses the invite up; NotFound for an unknown, used or expired one. */
  readonly acceptInvite: (
    token: string,
    password: string,
    clientAddress: string
  ) => Effect.Effect<User, InvalidBody | NotFound | StorageError>
  /**
   * A new session for the right e-mail and password. A wrong e-mail, a wrong password and an account
   * with `maxFailedSignIns` failures in the window all fail with the same Unauthorized.
   */
  readonly signIn: (
    email: string,
    password: string,
    clientAddress: string
  ) => Effect.Effect<SignedIn, Unauthorized | StorageError>
  /** The live session of a cookie's token and its user; None when unknown, idle too long or expired. */
  readonly authenticate: (token: string) => Effect.Effect<Option.Option<Current>, StorageError>
  /** Ends the session of the token (nothing when there is none). */
  readonly signOut: (token: string, clientAddress: string) => Effect.Effect<void, StorageError>
  readonly user: (id: Ids.UserId) => Effect.Effect<Option.Option<User>, StorageError>
  /** Every user, by id (the operator's list). */
  readonly users: Effect.Effect<ReadonlyArray<User>, StorageError>
  /**
   * Replaces the user's workspace roles (docs/accounts.md#changing-roles-and-removing-users): NotFound
   * for an unknown user or workspace, InvalidBody for a bad role. The user's OAuth grants stop
   * reaching the workspaces the user left, and the subscriptions they (and the user) created there
   * are removed; a grant left with no workspace is revoked. One transaction, audited.
   */
  readonly setMemberships: (
    id: string,
    workspaces: CreateUserInput["workspaces"],
    by: Audit.By
  ) => Effect.Effect<User, InvalidBody | NotFound | StorageError>
  /**
   * Removes the user: their sessions and invites end, their OAuth grants are revoked, and the
   * subscriptions they and their grants created are removed. One transaction, audited.
   */
  readonly removeUser: (id: string, by: Audit.By) => Effect.Effect<void, NotFound | StorageError>
  /** Users with a role in any of these workspaces, by id. */
  readonly usersOfWorkspaces: (ids: ReadonlyArray<WorkspaceId>) => Effect.Effect<ReadonlyArray<User>, StorageError>
}>() {}

export const make = Effect.gen(function*() {
  const catalog = yield* Catalog
  const transactor = yield* Transactor
  const passwords = yield* Passwords
  const audit = yield* Audit.Audit
  const credentials = yield* CredentialStore
  const oauth = yield* OAuthStore
  const subscriptions = yield* SubscriptionStore
  const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

  // A constant PHC string to check a password against when the e-mail is unknown, so that a wrong
  // e-mail costs the same time as a wrong password.
  const decoy = yield* passwords.hash(generate("invite"))

  const validMemberships = (workspaces: CreateUserInput["workspaces"]) =>
    Effect.gen(function*() {
      if (workspaces.length === 0) return yield* invalid("workspaces must name at least one workspace")
      const seen = new Set<string>()
      const memberships: Array<Membership> = []
      for (const w of workspaces) {
        if (!Role.literals.includes(w.role as Role)) {
          return yield* invalid(`role must be one of ${Role.literals.join(", ")}`)
        }
        if (seen.has(w.workspaceId)) return yield* invalid(`workspace ${w.workspaceId} is named twice`)
        seen.add(w.workspaceId)
        const found = yield* catalog.find("workspace", { id: Ids.unsafe("WorkspaceId", w.workspaceId) })
        if (found.length === 0) return yield* new NotFound({ message: "workspace not found" })
        memberships.push({ workspaceId: found[0]!.id, role: w.role as Role })
      }
      return memberships
    })

  const userByEmail = (address: string) =>
    Effect.map(
      catalog.find("user", { emailKey: address.trim().toLowerCase() }),
      (users) => Option.fromNullable(users[0])
    )

  const createUser = (input: CreateUserInput, by: Audit.By) =>
    Effect.gen(function*() {
      const address = input.email.trim()
      if (address.length > 254 || !email.test(address)) return yield* invalid("email is not an e-mail address")
      const name = input.name.trim()
      if (name.length === 0 || name.length > 200) return yield* invalid("name must be 1 to 200 characters")
      if (input.password !== undefined) {
        const problem = passwordProblem(input.password)
        if (problem !== undefined) return yield* invalid(problem)
      }
      const memberships = yield* validMemberships(input.workspaces)
      const passwordHash = input.password === undefined ? undefined : yield* passwords.hash(input.password)
      const at = yield* now
      const user = new User({
        id: Ids.makeAt("UserId", at.getTime()),
        email: address,
        emailKey: address.toLowerCase(),
        name,
        memberships,
        ...(passwordHash === undefined ? {} : { passwordHash }),
        failedSignIns: [],
        createdAt: at
      })
      const inviteToken = passwordHash === undefined ? generate("invite") : undefined
      yield* transactor.withTransaction(Effect.gen(function*() {
        if (!(yield* catalog.insert("user", user))) {
          return yield* new Conflict({ message: "a user with this e-mail address exists" })
        }
        if (inviteToken !== undefined) {
          yield* catalog.insert(
            "invite",
            new Invite({
              id: Ids.makeAt("InviteId", at.getTime()),
              userId: user.id,
              tokenHash: hashToken(inviteToken),
              createdAt: at,
              expiresAt: new Date(at.getTime() + inviteMillis)
            })
          )
        }
        for (const m of memberships) {
          yield* audit.record(by, {
            action: "user.create",
            target: user.id,
            workspaceId: m.workspaceId,
            details: { email: user.email, role: m.role, invited: inviteToken !== undefined }
          })
        }
      }))
      return inviteToken === undefined ? { user } : { user, inviteToken }
    })

  const pendingInvite = (token: string) =>
    Effect.gen(function*() {
      const at = yield* now
      const [invite] = yield* catalog.find("invite", { tokenHash: hashToken(token), usedAt: null })
      if (invite === undefined || invite.usedAt !== undefined || invite.expiresAt.getTime() <= at.getTime()) {
        return Option.none<readonly [Invite, User]>()
      }
      const [user] = yield* catalog.find("user", { id: invite.userId })
      return user === undefined ? Option.none() : Option.some([invite, user] as const)
    })

  const invited = (token: string) => Effect.map(pendingInvite(token), Option.map(([, user]) => user))

  const acceptInvite = (token: string, password: string, clientAddress: string) =>
    Effect.gen(function*() {
      const problem = passwordProblem(password)
      if (problem !== undefined) return yield* invalid(problem)
      const passwordHash = yield* passwords.hash(password)
      return yield* transactor.withTransaction(Effect.gen(function*() {
        const pending = yield* pendingInvite(token)
        if (Option.isNone(pending)) return yield* new NotFound({ message: "invite not found, used or expired" })
        const [invite, user] = pending.value
        const at = yield* now
        // Of two concurrent acceptances exactly one marks the invite used.
        const used = yield* catalog.update("invite", { id: invite.id, usedAt: null }, { usedAt: at })
        if (used.length === 0) return yield* new NotFound({ message: "invite not found, used or expired" })
        const [updated] = yield* catalog.update("user", { id: user.id }, { passwordHash, failedSignIns: [] })
        for (const m of user.memberships) {
          yield* audit.record({ actor: { kind: "invite", id: invite.id }, clientAddress }, {
            action: "user.set_password",
            target: user.id,
            workspaceId: m.workspaceId
          })
        }
        return updated ?? user
      }))
    })

  const refused = new Unauthorized({ message: "wrong e-mail or password" })

  const auditSignIn = (user: User, action: string, clientAddress: string, sessionId: string) =>
    Effect.forEach(user.memberships, (m) =>
      audit.record({ actor: { kind: "user", id: user.id }, clientAddress }, {
        action,
        target: sessionId,
        workspaceId: m.workspaceId
      }), { discard: true })

  const signIn = (address: string, password: string, clientAddress: string) =>
    Effect.gen(function*() {
      const found = yield* userByEmail(address)
      if (Option.isNone(found) || found.value.passwordHash === undefined) {
        yield* passwords.verify(decoy, password)
        return yield* refused
      }
      const user = found.value
      const at = yield* now
      const recent = user.failedSignIns.filter((d) => at.getTime() - d.getTime() < lockoutWindowMillis)
      if (recent.length >= maxFailedSignIns) {
        yield* auditSignIn(user, "session.sign_in_refused", clientAddress, user.id)
        return yield* refused
      }
      const right = yield* passwords.verify(user.passwordHash!, password)
      if (!right) {
        yield* transactor.withTransaction(Effect.zipRight(
          catalog.update("user", { id: user.id }, { failedSignIns: [...recent, at] }),
          auditSignIn(user, "session.sign_in_failed", clientAddress, user.id)
        ))
        return yield* refused
      }
      const token = generate("session")
      const session = new Session({
        id: Ids.makeAt("SessionId", at.getTime()),
        userId: user.id,
        tokenHash: hashToken(token),
        createdAt: at,
        lastSeenAt: at,
        expiresAt: new Date(at.getTime() + maxMillis)
      })
      yield* transactor.withTransaction(Effect.gen(function*() {
        yield* catalog.insert("session", session)
        if (user.failedSignIns.length > 0) yield* catalog.update("user", { id: user.id }, { failedSignIns: [] })
        yield* auditSignIn(user, "session.sign_in", clientAddress, session.id)
      }))
      return { token, session, user }
    })

  const authenticate = (token: string) =>
    Effect.gen(function*() {
      if (!token.startsWith("sid_") || token.length > 128) return Option.none<Current>()
      const [session] = yield* catalog.find("session", { tokenHash: hashToken(token) })
      if (session === undefined) return Option.none<Current>()
      const at = (yield* now).getTime()
      if (at >= session.expiresAt.getTime() || at - session.lastSeenAt.getTime() >= idleMillis) {
        yield* catalog.remove("session", { id: session.id })
        return Option.none<Current>()
      }
      const [user] = yield* catalog.find("user", { id: session.userId })
      if (user === undefined) return Option.none<Current>()
      if (at - session.lastSeenAt.getTime() >= touchMillis) {
        const [touched] = yield* catalog.update("session", { id: session.id }, { lastSeenAt: new Date(at) })
        return Option.some({ session: touched ?? session, user })
      }
      return Option.some({ session, user })
    })

  const signOut = (token: string, clientAddress: string) =>
    transactor.withTransaction(Effect.gen(function*() {
      const removed = yield* catalog.remove("session", { tokenHash: hashToken(token) })
      for (const session of removed) {
        const [user] = yield* catalog.find("user", { id: session.userId })
        if (user !== undefined) yield* auditSignIn(user, "session.sign_out", clientAddress, session.id)
      }
    }))

  const userById = (id: string) =>
    Effect.flatMap(
      catalog.find("user", { id: Ids.unsafe("UserId", id) }),
      (found) =>
        found[0] === undefined ? Effect.fail(new NotFound({ message: "user not found" })) : Effect.succeed(found[0])
    )

  /**
   * Takes the user's grants and subscriptions out of `left` (workspaces the user no longer belongs
   * to); with every workspace left, the user's grants are revoked. Inside the caller's transaction.
   */
  const leave = (user: User, left: ReadonlyArray<WorkspaceId>, at: Date, by: Audit.By) =>
    Effect.gen(function*() {
      if (left.length === 0) return
      yield* subscriptions.removeCreatedBy(left, { type: "user", id: user.id })
      for (const grant of yield* oauth.grantsOfUser(user.id)) {
        const dropped = grant.workspaceIds.filter((w) => left.includes(w))
        if (dropped.length === 0) continue
        const kept = grant.workspaceIds.filter((w) => !left.includes(w))
        yield* kept.length === 0
          ? credentials.revokeGrant(grant.id, at)
          : credentials.setGrantWorkspaces(grant.id, kept)
        yield* subscriptions.removeCreatedBy(dropped, { type: "oauth", id: grant.id })
        for (const workspaceId of dropped) {
          yield* audit.record(by, {
            action: "oauth_grant.revoke",
            target: grant.id,
            workspaceId,
            details: { reason: "user left the workspace", userId: user.id }
          })
        }
      }
    })

  const setMemberships = (id: string, workspaces: CreateUserInput["workspaces"], by: Audit.By) =>
    Effect.gen(function*() {
      yield* userById(id)
      const memberships = yield* validMemberships(workspaces)
      const at = yield* now
      return yield* transactor.withTransaction(Effect.gen(function*() {
        const user = yield* userById(id)
        const [updated] = yield* catalog.update("user", { id: user.id }, { memberships })
        if (updated === undefined) return yield* new NotFound({ message: "user not found" })
        const kept = new Set(memberships.map((m) => m.workspaceId))
        const left = user.memberships.map((m) => m.workspaceId).filter((w) => !kept.has(w))
        yield* leave(user, left, at, by)
        const before = new Map(user.memberships.map((m) => [m.workspaceId as string, m.role]))
        const after = new Map(memberships.map((m) => [m.workspaceId as string, m.role]))
        for (const workspaceId of new Set([...before.keys(), ...after.keys()])) {
          yield* audit.record(by, {
            action: "user.set_roles",
            target: user.id,
            workspaceId: Ids.unsafe("WorkspaceId", workspaceId),
            details: { from: before.get(workspaceId) ?? null, to: after.get(workspaceId) ?? null }
          })
        }
        return updated
      }))
    })

  const removeUser = (id: string, by: Audit.By) =>
    Effect.gen(function*() {
      const at = yield* now
      yield* transactor.withTransaction(Effect.gen(function*() {
        const user = yield* userById(id)
        const removed = yield* catalog.remove("user", { id: user.id })
        if (removed.length === 0) return yield* new NotFound({ message: "user not found" })
        yield* catalog.remove("session", { userId: user.id })
        yield* catalog.remove("invite", { userId: user.id })
        // Every grant goes, also one whose workspaces the user had already left.
        yield* leave(user, user.memberships.map((m) => m.workspaceId), at, by)
        for (const grant of yield* oauth.grantsOfUser(user.id)) {
          yield* credentials.revokeGrant(grant.id, at)
          yield* subscriptions.removeCreatedBy(grant.workspaceIds, { type: "oauth", id: grant.id })
        }
        for (const m of user.memberships) {
          yield* audit.record(by, {
            action: "user.delete",
            target: user.id,
            workspaceId: m.workspaceId,
            details: { email: user.email }
          })
        }
      }))
    })

  return Accounts.of({
    users: Effect.map(catalog.find("user", {}), (users) => [...users].sort((a, b) => (a.id < b.id ? -1 : 1))),
    setMemberships,
    removeUser,
    createUser,
    invited,
    acceptInvite,
    signIn,
    authenticate,
    signOut,
    user: (id) => Effect.map(catalog.find("user", { id }), (users) => Option.fromNullable(users[0])),
    usersOfWorkspaces: (ids) =>
      ids.length === 0 ? Effect.succeed([]) : Effect.map(
        catalog.find("user", {}),
        (users) => users.filter((u) => u.memberships.some((m) => ids.includes(m.workspaceId)))
      )
  })
})

export const layer: Layer.Layer<
  Accounts,
  never,
  Catalog | CredentialStore | OAuthStore | SubscriptionStore | Transactor | Passwords | Audit.Audit
> = Layer.effect(
  Accounts,
  make
)
