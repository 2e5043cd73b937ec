#!/usr/bin/env node
/**
 * `pnpm check:packages`: each library package as it would be published. Builds `dist/` (tsc),
 * packs it with `pnpm pack` (which applies `publishConfig`), then lints the tarball with publint
 * and @arethetypeswrong/cli. Prints each tarball's size; exits non-zero if a check fails.
 *
 *   node scripts/check-packages.mjs [--out <dir>]   keep the tarballs in <dir> (default: a temp dir, removed)
 */
import { execFileSync, spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))

/** The library packages, in dependency order. */
const packages = ["core", "storage-conformance", "storage-pg", "http", "webhooks", "scheduler", "mcp", "server"]

/**
 * The environment for package-manager children: without the `npm_*` variables that a parent
 * `pnpm run` sets, which npm would otherwise read as its own configuration.
 */
const cleanEnv = () =>
  Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith("npm_")))

/** How to run this repository's pnpm: the one running us, else the version `packageManager` pins. */
const pnpmCommand = () => {
  const execPath = process.env.npm_execpath
  if (execPath !== undefined && basename(execPath).startsWith("pnpm")) return [process.execPath, execPath]
  const pinned = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).packageManager
  return ["npx", "-y", pinned]
}

/** The JavaScript file of a root dev dependency's command, run with this node. */
const binOf = (pkg, name) => {
  const manifest = join(root, "node_modules", pkg, "package.json")
  const bin = JSON.parse(readFileSync(manifest, "utf8")).bin
  return join(dirname(manifest), typeof bin === "string" ? bin : bin[name])
}

const run = (command, args, cwd) =>
  spawnSync(command, args, { cwd, env: cleanEnv(), encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })

/** A package's public modules beside its index, for attw, which does not expand `./*` itself. */
const entrypoints = (dir) =>
  readdirSync(join(dir, "src"))
    .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts") && file !== "index.ts")
    .map((file) => `./${file.slice(0, -3)}`)

/**
 * Builds, packs and lints every library package into `out`. Returns one result per package:
 * its tarball's path and size, and each check's output when it failed.
 */
const checkPackages = (out) => {
  mkdirSync(out, { recursive: true })
  // One build of every package (the server's references chain the others, the test kit is apart);
  // each pack's prepack then finds it done.
  const builds = ["packages/server/tsconfig.build.json", "packages/storage-conformance/tsconfig.build.json"]
  execFileSync(process.execPath, [binOf("typescript", "tsc"), "-b", ...builds], {
    cwd: root,
    stdio: "pipe"
  })
  const [pnpm, ...pnpmArgs] = pnpmCommand()
  return packages.map((name) => {
    const dir = join(root, "packages", name)
    const packed = run(pnpm, [...pnpmArgs, "pack", "--pack-destination", out], dir)
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))
    const tarball = join(out, `${manifest.name.replace("@", "").replace("/", "-")}-${manifest.version}.tgz`)
    if (packed.status !== 0) {
      return { name: manifest.name, tarball, bytes: 0, failures: [`pnpm pack\n${packed.stdout}${packed.stderr}`] }
    }
    const publint = run(process.execPath, [binOf("publint", "publint"), "run", "--strict", tarball], root)
    const attw = run(process.execPath, [
      binOf("@arethetypeswrong/cli", "attw"),
      tarball,
      "--profile",
      "esm-only",
      "--format",
      "table-flipped",
      "--no-emoji",
      "--no-color",
      "--include-entrypoints",
      ...entrypoints(dir)
    ], root)
    const failures = [
      ...(publint.status === 0 ? [] : [`publint\n${publint.stdout}${publint.stderr}`]),
      ...(attw.status === 0 ? [] : [`attw\n${attw.stdout}${attw.stderr}`])
    ]
    return {
      name: manifest.name,
      tarball,
      bytes: statSync(tarball).size,
      failures,
      publint: publint.stdout,
      attw: attw.stdout
    }
  })
}

const main = () => {
  const at = process.argv.indexOf("--out")
  const keep = at === -1 ? undefined : process.argv[at + 1]
  const out = keep ?? mkdtempSync(join(tmpdir(), "streaks-packages-"))
  try {
    const results = checkPackages(out)
    for (const result of results) {
      const size = `${(result.bytes / 1024).toFixed(1)} KiB`
      console.log(
        `${result.name.padEnd(30)} ${basename(result.tarball).padEnd(40)} ${size.padStart(10)}  ${
          result.failures.length === 0 ? "publint ok, attw ok" : "FAILED"
        }`
      )
      for (const failure of result.failures) console.log(failure)
    }
    if (results.some((result) => result.failures.length > 0)) process.exitCode = 1
  } finally {
    if (keep === undefined) rmSync(out, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main()
