package middleware

import "github.com/sluicehq/sluice/engine"

// RetryAfterSeconds is the Retry-After of the block answers when the rule
// that blocked does not say when a call would pass (see RetryAfter): one
// second is the window of a default rule.
const RetryAfterSeconds = 1

// TooManyRequests is the message of the default block answer: it reaches
// end users, who have no business learning the rules.
const TooManyRequests = "too many requests"

// BlockedMessage is the message of a block answer that names the rule,
// such as "too many requests: blocked by flow rule orders-qps": the
// middleware's default answer when it is asked for details.
func BlockedMessage(blk *engine.BlockError) string {
	msg := TooManyRequests + ": blocked by " + string(blk.Reason()) + " rule"
	if blk.Rule() == "" {
		return msg
	}
	return msg + " " + blk.Rule()
}
