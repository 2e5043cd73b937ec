/** The text of the built widget module, `dist/widget.js` (`pnpm build` writes both). */
declare const source: string
export default source
