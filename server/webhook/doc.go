// Package webhook delivers the events of the store's webhook outbox to the
// endpoints admins register: a worker claims the due deliveries, posts
// each signed as Standard Webhooks asks, retries with exponential backoff
// and full jitter, and pauses an endpoint that keeps failing. It also
// decides which URLs an endpoint may have, and which addresses a delivery
// may connect to (SSRF). docs/webhooks.md is its contract.
package webhook
