/** @streaks/storage-pg */
export {}
