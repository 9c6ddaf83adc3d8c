package server

import (
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/sluicehq/sluice/server/codec"
)

// writeHistory answers h as writeJSON would, byte for byte (a test holds
// the two equal), without reflection: a day of minutes is 1,440 points,
// and encoding/json spent a third of the answer's server time on them.
func writeHistory(c *fiber.Ctx, h MetricHistory) error {
	body := appendHistoryJSON(make([]byte, 0, 64+200*len(h.Points)), h)
	c.Status(http.StatusOK).Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Send(body)
}

// appendHistoryJSON appends h as marshalJSON encodes it.
func appendHistoryJSON(b []byte, h MetricHistory) []byte {
	b = codec.AppendString(append(b, `{"resource":`...), h.Resource)
	b = codec.AppendString(append(b, `,"step":`...), h.Step)
	b = codec.AppendTime(append(b, `,"from":`...), h.From)
	b = codec.AppendTime(append(b, `,"to":`...), h.To)
	b = append(b, `,"points":[`...)
	for i, p := range h.Points {
		if i > 0 {
			b = append(b, ',')
		}
		b = codec.AppendTime(append(b, `{"time":`...), p.Time)
		b = strconv.AppendInt(append(b, `,"pass":`...), p.Pass, 10)
		b = strconv.AppendInt(append(b, `,"block":`...), p.Block, 10)
		b = strconv.AppendInt(append(b, `,"shadowBlock":`...), p.ShadowBlock, 10)
		b = strconv.AppendInt(append(b, `,"complete":`...), p.Complete, 10)
		b = strconv.AppendInt(append(b, `,"error":`...), p.Error, 10)
		b = codec.AppendFloat(append(b, `,"avgRtMs":`...), p.AvgRtMs)
		b = strconv.AppendInt(append(b, `,"minRtMs":`...), p.MinRtMs, 10)
		b = strconv.AppendInt(append(b, `,"maxRtMs":`...), p.MaxRtMs, 10)
		b = strconv.AppendInt(append(b, `,"maxConcurrency":`...), p.MaxConcurrency, 10)
		b = strconv.AppendInt(append(b, `,"busiestSecond":`...), p.BusiestSecond, 10)
		b = strconv.AppendInt(append(b, `,"adaptiveLimitMin":`...), p.AdaptiveLimitMin, 10)
		b = strconv.AppendInt(append(b, `,"adaptiveLimitMax":`...), p.AdaptiveLimitMax, 10)
		b = strconv.AppendInt(append(b, `,"adaptiveLimitLast":`...), p.AdaptiveLimitLast, 10)
		if len(p.BlockedBy) > 0 {
			b = append(b, `,"blockedBy":[`...)
			for j, rb := range p.BlockedBy {
				if j > 0 {
					b = append(b, ',')
				}
				b = codec.AppendString(append(b, `{"reason":`...), rb.Reason)
				b = codec.AppendString(append(b, `,"rule":`...), rb.Rule)
				b = strconv.AppendInt(append(b, `,"blocked":`...), rb.Blocked, 10)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"covered":[`...)
	for i, c := range h.Covered {
		if i > 0 {
			b = append(b, ',')
		}
		b = codec.AppendTime(append(b, `{"from":`...), c.From)
		b = codec.AppendTime(append(b, `,"to":`...), c.To)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}
