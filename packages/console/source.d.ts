/** The console's built files as text (`dist/source.js`, made by `pnpm build`). */
declare const source: {
  /** The app, one ES module. */
  readonly script: string
  /** Its style sheet. */
  readonly style: string
}
export default source
