/** @streaks/core */
export {}
