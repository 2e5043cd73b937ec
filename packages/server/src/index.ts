/** @streaks/server */
export {}
