package middleware

import "github.com/sluicehq/sluice/engine"

// RetryAfterSeconds is the Retry-After the default block answers send: the
// engine does not say when a blocked call would pass, and one second is the
// window of a default rule.
const RetryAfterSeconds = 1

// BlockedMessage is the message of the default block answer, such as
// "too many requests: blocked by flow rule orders-qps".
func BlockedMessage(blk *engine.BlockError) string {
	msg := "too many requests: blocked by " + string(blk.Reason()) + " rule"
	if blk.Rule() == "" {
		return msg
	}
	return msg + " " + blk.Rule()
}
