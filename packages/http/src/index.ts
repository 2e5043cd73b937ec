/** @streaks/http */
export {}
