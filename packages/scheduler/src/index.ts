/** @streaks/scheduler */
export {}
