/** @streaks/webhooks */
export {}
