/**
 * A batch's statement split by project: each statement names its one project (`project_id =
 * $1`), so that on a schema distributed by project (Citus) it runs on that project's shard
 * (docs/scaling.md#statements-citus-can-plan). A batch of one project stays one statement.
 */
import { Effect } from "effect"
import { pipelined } from "./pipeline.js"

interface Group<I> {
  readonly projectId: string
  readonly inputs: Array<I>
  /** The position in the batch of each input of the group. */
  readonly at: Array<number>
}

/** The inputs by project, the projects in the order they first appear, each group in input order. */
const groupsOf = <I>(inputs: ReadonlyArray<I>, projectOf: (input: I) => string): Array<Group<I>> => {
  const groups = new Map<string, Group<I>>()
  inputs.forEach((input, i) => {
    const projectId = projectOf(input)
    const group = groups.get(projectId)
    if (group === undefined) groups.set(projectId, { projectId, inputs: [input], at: [i] })
    else {
      group.inputs.push(input)
      group.at.push(i)
    }
  })
  return [...groups.values()]
}

// The groups' statements in one round trip on a pipelining connection, in the groups' order.
const each = <I, A, E, R>(
  groups: ReadonlyArray<Group<I>>,
  statement: (projectId: string, group: ReadonlyArray<I>) => Effect.Effect<A, E, R>
): Effect.Effect<ReadonlyArray<A>, E, R> =>
  groups.length === 1
    ? Effect.map(statement(groups[0]!.projectId, groups[0]!.inputs), (a) => [a])
    : pipelined(groups.map((g) => statement(g.projectId, g.inputs)))

/**
 * Runs `statement` once per project of `inputs` and answers its results in input order:
 * `statement` answers one result per input of its group, in the group's order.
 */
export const perProject = <I, A, E, R>(
  inputs: ReadonlyArray<I>,
  projectOf: (input: I) => string,
  statement: (projectId: string, group: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<A>, E, R>
): Effect.Effect<ReadonlyArray<A>, E, R> => {
  const groups = groupsOf(inputs, projectOf)
  if (groups.length === 1) return statement(groups[0]!.projectId, groups[0]!.inputs)
  return Effect.map(each(groups, statement), (answers) => {
    const out = new Array<A>(inputs.length)
    answers.forEach((answer, g) => groups[g]!.at.forEach((i, n) => (out[i] = answer[n]!)))
    return out
  })
}

/** As `perProject`, for statements whose rows answer no input in particular: the groups' rows, one after another. */
export const rowsPerProject = <I, A, E, R>(
  inputs: ReadonlyArray<I>,
  projectOf: (input: I) => string,
  statement: (projectId: string, group: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<A>, E, R>
): Effect.Effect<ReadonlyArray<A>, E, R> =>
  Effect.map(each(groupsOf(inputs, projectOf), statement), (rows) => rows.flat())
