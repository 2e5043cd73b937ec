/**
 * The database state the ingest and state rounds start from (`populate`), put back before each
 * ingest round (`rewind`), and the traffic mix it is filled for (`Mix`).
 */
import type pg from "pg"

export const MEMBERS = 100_000
export const PROGRAMS = 5

/**
 * What the actions do besides extending a run. By default none sends `tz` and none crosses a
 * milestone, as most actions of a live product. Two knobs add the paths that cost a batch more:
 * - `BENCH_TZ=1`: every action sends `"tz":"UTC"`, and each round starts with no member's zone
 *   stored, as for members new to the service: a member's first action of the round stores it
 *   (`MemberStore.setTimezones`, with its batch's last writes), later ones find it. UTC is the
 *   streaks' zone already, so the days counted are the default's.
 * - `BENCH_CROSSING=10`: that percentage of members (by number) stand one day short of the 7-day
 *   milestone, which has a reward: their first action of the round in each program crosses it
 *   (an achievement, two events and their listeners read; no subscription listens, so nothing is
 *   enqueued). Each round starts with them short of it again.
 * And one for a path outside the batch:
 * - `BENCH_IDEMPOTENCY=1`: every action sends an `idempotencyKey` no other action sends, as a
 *   sender that retries safely does: each is claimed before its batch and completed in it.
 */
export interface Mix {
  readonly tz: boolean
  readonly crossingPercent: number
  /** `BENCH_IDEMPOTENCY=1`: every action sends an `idempotencyKey` of its own (claimed, then completed). */
  readonly idempotency: boolean
}

const on = (value: string | undefined) => value !== undefined && value !== "0"

export const mixOf = (env: NodeJS.ProcessEnv): Mix => ({
  tz: on(env.BENCH_TZ),
  crossingPercent: Math.min(100, Math.max(0, Number(env.BENCH_CROSSING ?? 0))),
  idempotency: on(env.BENCH_IDEMPOTENCY)
})

export const describe = (mix: Mix): string | undefined =>
  !mix.tz && mix.crossingPercent === 0 && !mix.idempotency ? undefined : [
    ...(mix.tz ? ["every action sends tz, each round's members start with no zone stored"] : []),
    ...(mix.crossingPercent > 0 ? [`${mix.crossingPercent} % of members one day short of the 7-day milestone`] : []),
    ...(mix.idempotency ? ["every action sends an idempotency key of its own"] : [])
  ].join("; ")

/** The ingest body's template (`Load.Traffic`): the fields every action sends, and the mix's. */
export const eventTemplate = (siteKey: string, mix: Mix): string =>
  JSON.stringify({
    siteKey,
    userHash: "{member}",
    event: "{event}",
    ...(mix.tz ? { tz: "UTC" } : {}),
    ...(mix.idempotency ? { idempotencyKey: "{key}" } : {})
  })

/** A program of the fill: its 3-day milestone (reached by everyone) and its 7-day one. */
export interface Program {
  readonly id: string
  readonly reached: string
  readonly next: string
}

/**
 * CHECKPOINT needs a superuser or pg_checkpoint: without it the figures stay comparable only
 * within one run.
 */
export const checkpoint = (client: pg.Client) =>
  client.query("checkpoint").then(
    () => undefined,
    (e: Error) => console.log(`# no checkpoint (${e.message}): full-page images left to chance`)
  )

/**
 * `BENCH_STEADY=1`: after each ingest round's checkpoint, every page of the streaks table pays its
 * full-page image before the warm-up (one pass that locks every row), so that the round measures
 * ingest between checkpoints rather than the burst of images that follows one.
 */
export const payImages = async (client: pg.Client) => {
  const started = Date.now()
  // One statement: its own transaction holds the locks long enough to write every page's image.
  await client.query("select count(*) from (select 1 from streaks_streaks for update) t")
  console.log(`# steady: every streaks page's full-page image paid in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}

// Whether the member of a row (`user_hash` 'm' || n) is one of `BENCH_CROSSING`'s.
const crossing = (mix: Mix) => `(substr(user_hash, 2)::int % 100 < ${Math.round(mix.crossingPercent)})`

/**
 * The 100,000 members already have a streak in each program, as in a product that has been
 * running: active yesterday (UTC, their zone), run 3, best 5, the 3-day milestone achieved (best 5
 * reached it; in the achievements table and, as the service has recorded it since migration 0003,
 * on the streak row), and metered active in yesterday's month (in the usage table and, since
 * migration 0005, on the row). The hourly sweep has passed since today began: it sent today's
 * at-risk and moved the row to the start of tomorrow (when the run breaks), so nothing is due
 * during the run. So an action extends a run of 3 to 4: counted, the row updated (its due instant
 * stays the start of tomorrow), milestones checked and none newly reached, as for most actions of
 * a live product (`Mix` for the others). Then the tables are vacuumed and analysed, as autovacuum
 * keeps them in production: on tables filled seconds ago the planner has no statistics and may
 * pick an index that reads a whole program per key, and autovacuum would set about them during
 * the first runs. Then a checkpoint.
 */
export const populate = async (
  client: pg.Client,
  workspaceId: string,
  projectId: string,
  programs: ReadonlyArray<Program>,
  mix: Mix
) => {
  await client.query(
    `insert into streaks_streaks (project_id, program_id, user_hash, ledger, last_active_day, run, best, timezone,
       at_risk_notified_for, due_at, updated_at, achieved, metered_month)
     select $1, p.id, 'm' || g, 'live', today - 1, 3, 5, 'UTC', today, (today + 1)::timestamp at time zone 'UTC', now(),
       array[p.reached], to_char(today - 1, 'YYYY-MM')
     from (select (now() at time zone 'UTC')::date as today) t, unnest($2::text[], $3::text[]) p (id, reached),
       generate_series(0, $4::int - 1) g`,
    [projectId, programs.map((p) => p.id), programs.map((p) => p.reached), MEMBERS]
  )
  if (mix.crossingPercent > 0) await client.query(`update streaks_streaks set run = 6, best = 6 where ${crossing(mix)}`)
  await client.query(
    `insert into streaks_achievements (project_id, program_id, user_hash, ledger, milestone_id, achieved_at)
     select $1, p.id, 'm' || g, 'live', p.reached, now() - interval '3 days'
     from unnest($2::text[], $3::text[]) p (id, reached), generate_series(0, $4::int - 1) g`,
    [projectId, programs.map((p) => p.id), programs.map((p) => p.reached), MEMBERS]
  )
  // Yesterday's actions marked each member active in yesterday's month (UTC), as metering does.
  await client.query(
    `insert into streaks_usage (workspace_id, month, member)
     select $1, to_char((now() at time zone 'UTC')::date - 1, 'YYYY-MM'), $2 || ':m' || g
     from generate_series(0, $3::int - 1) g`,
    [workspaceId, projectId, MEMBERS]
  )
  await client.query("vacuum analyze")
  // The runs start from a checkpoint taken after the fill, so each pays the full-page images of
  // the pages it is first to touch. Otherwise whether the fill's WAL happened to trigger a
  // checkpoint decided that: about 4 KB of WAL per action, and the ingest rate with it.
  await checkpoint(client)
}

/**
 * Puts back the fill's state before each ingest round after the first: the streaks that acted
 * today return to yesterday's run (3, or 6 for `BENCH_CROSSING`'s members, whose 7-day milestone is
 * taken back), and today's days, the action log and the baseline's table are emptied (the fill
 * leaves them empty), as are the members' zones with `BENCH_TZ` and the idempotency keys with
 * `BENCH_IDEMPOTENCY`. So every round's actions extend
 * runs, as the first round's do: without it, later rounds found more and more keys already
 * counted today (a quarter of them by the third round on a host at 7,000 actions a second), which
 * the service answers without moving a streak, at less cost. The vacuum leaves the streak pages
 * room for their next updates, as autovacuum would.
 */
export const rewind = async (client: pg.Client, programs: ReadonlyArray<Program>, mix: Mix) => {
  const started = Date.now()
  const back = mix.crossingPercent > 0 ? `case when ${crossing(mix)} then 6 else 3 end` : "3"
  const best = mix.crossingPercent > 0 ? `case when ${crossing(mix)} then 6 else 5 end` : "5"
  const { rowCount } = await client.query(
    `update streaks_streaks s set last_active_day = today - 1, run = ${back}, best = ${best}, achieved = array[p.reached]
     from (select (now() at time zone 'UTC')::date as today) t, unnest($1::text[], $2::text[]) p (id, reached)
     where s.program_id = p.id and last_active_day = today`,
    [programs.map((p) => p.id), programs.map((p) => p.reached)]
  )
  if (mix.crossingPercent > 0) {
    await client.query("delete from streaks_achievements where milestone_id = any($1::text[])", [
      programs.map((p) => p.next)
    ])
  }
  const tables = ["streaks_activity_days", "streaks_actions", "bench_daily_activity"]
  if (mix.tz) tables.push("streaks_members")
  if (mix.idempotency) tables.push("streaks_idempotency_keys")
  await client.query(`truncate ${tables.join(", ")}`)
  await client.query("vacuum streaks_streaks")
  console.log(`# rewind: ${rowCount} streaks put back to yesterday in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}
