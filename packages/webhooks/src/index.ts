/**
 * @streaks/webhooks: the outbox dispatcher, Standard Webhooks signing, and `Signature.verify`
 * for receivers.
 */
export * as Dispatcher from "./Dispatcher.js"
export * as Egress from "./Egress.js"
export * as RetryPolicy from "./RetryPolicy.js"
export * as Sender from "./Sender.js"
export * as Signature from "./Signature.js"
