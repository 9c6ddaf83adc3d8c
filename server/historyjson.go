package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
)

// writeHistory answers h as writeJSON would, byte for byte (a test holds
// the two equal), without reflection: a day of minutes is 1,440 points,
// and encoding/json spent a third of the answer's server time on them.
func writeHistory(c *fiber.Ctx, h MetricHistory) error {
	body, err := appendHistoryJSON(make([]byte, 0, 64+200*len(h.Points)), h)
	if err != nil {
		return err
	}
	c.Status(http.StatusOK).Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Send(body)
}

// appendHistoryJSON appends h as marshalJSON encodes it. The strings go
// through marshalJSON itself: appendJSONString escapes <, > and & in a name
// that needs any other escape, as marshalJSON does not.
func appendHistoryJSON(b []byte, h MetricHistory) ([]byte, error) {
	resource, err := marshalJSON(h.Resource)
	if err != nil {
		return nil, err
	}
	step, err := marshalJSON(h.Step)
	if err != nil {
		return nil, err
	}
	b = append(append(b, `{"resource":`...), resource...)
	b = append(append(b, `,"step":`...), step...)
	b = appendJSONTime(append(b, `,"from":`...), h.From)
	b = appendJSONTime(append(b, `,"to":`...), h.To)
	b = append(b, `,"points":[`...)
	for i, p := range h.Points {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONTime(append(b, `{"time":`...), p.Time)
		b = strconv.AppendInt(append(b, `,"pass":`...), p.Pass, 10)
		b = strconv.AppendInt(append(b, `,"block":`...), p.Block, 10)
		b = strconv.AppendInt(append(b, `,"shadowBlock":`...), p.ShadowBlock, 10)
		b = strconv.AppendInt(append(b, `,"complete":`...), p.Complete, 10)
		b = strconv.AppendInt(append(b, `,"error":`...), p.Error, 10)
		b = appendJSONFloat(append(b, `,"avgRtMs":`...), p.AvgRtMs)
		b = strconv.AppendInt(append(b, `,"minRtMs":`...), p.MinRtMs, 10)
		b = strconv.AppendInt(append(b, `,"maxRtMs":`...), p.MaxRtMs, 10)
		b = strconv.AppendInt(append(b, `,"maxConcurrency":`...), p.MaxConcurrency, 10)
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

// appendJSONTime appends t as time.Time's MarshalJSON does, for the
// years 0 to 9999 that the API's times keep to.
func appendJSONTime(b []byte, t time.Time) []byte {
	return append(t.AppendFormat(append(b, '"'), time.RFC3339Nano), '"')
}
